//go:build cgo && linux && (amd64 || arm64)

package nsjail

// The embedded reaper: cmd/airlock-spawn/spawn.c's reaper, compiled into
// every cgo binary that links this package, so that a binary with no
// airlock-spawn beside it (go build, go install, a library's program
// without Config.SpawnPath) still gives its sandboxes a pid 1 that is not
// the program (internal/jailinit/reaper_linux.go says why one is needed).
// spawn.c, compiled with AIRLOCK_EMBEDDED, leaves out its own entry and
// the spawn helper's main, and adds a constructor: glibc runs it, with
// argc, argv and envp, before Go's runtime starts (as runc's nsexec
// does), and it runs the reaper, never returning, only in a process
// whose argv[0] is "airlock-reaper" (the init's exec of this binary,
// reaperPath). In every other process it returns at once, having done
// nothing else.

/*
#cgo CFLAGS: -O2 -fno-stack-protector -Wno-unused-function -Wno-unused-variable
#define AIRLOCK_EMBEDDED 1
#include "../cmd/airlock-spawn/spawn.c"
*/
import "C"

// embeddedReaper says that this binary holds the reaper (reaperPath).
const embeddedReaper = true
