// Command airlock-init is airlock's sandbox init as a binary of its own,
// built without cgo: the process every sandbox starts as, re-executed in
// its new namespaces, which builds the jail and execs the program. The
// airlock binary can be its own init (it re-executes itself, the
// default); this one starts faster, because it links no C runtime and
// far less Go (scripts/bench). scripts/build builds it beside airlock
// with a shared build token, and `airlock run` uses it from there; a
// daemon points executor.Config.InitPath at it.
//
// It links only the init's side (internal/jailinit): no HTTP, YAML,
// libseccomp or cgroup library, whose package initialization would run
// on every sandbox's start. It is started only by airlock (nsjail.Init
// in the parent binary is the same code); run by hand it exits 2.
package main

import (
	"fmt"
	"os"

	"github.com/airlock-sandbox/airlock/internal/jailinit"
	_ "github.com/airlock-sandbox/airlock/internal/prefault/initheap" // its heap's window populated as it starts
)

func main() {
	jailinit.Init()
	fmt.Fprintln(os.Stderr, "airlock-init: this is the sandbox init that airlock starts; it does nothing run by hand")
	os.Exit(2)
}
