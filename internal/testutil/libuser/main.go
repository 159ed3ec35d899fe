// Command libuser is a program that links airlock as a library, as a Go
// user writes one: executor.New with no InitPath and no SpawnPath, so
// that this binary is its sandboxes' init (re-executed) and, built with
// cgo, their reaper (nsjail.CheckReaper). scripts/testlib.sh builds it
// three ways for executor's TestLibraryUser: as is; without the
// nsjail.Init() call (-X main.skipInit=1); and with CGO_ENABLED=0.
//
//	libuser PROGRAM [ARGS...]
//
// It runs PROGRAM under the default policy (with no seccomp filter if
// LIBUSER_NO_FILTER is 1) and prints the result (status,
// exit code, signal, enforced pid 1) as JSON on stdout, or the error on
// stderr (exit 2 for New's, 3 for Execute's).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// skipInit, set at link time, leaves out the nsjail.Init() call: the
// mistake whose error must name it.
var skipInit string

func main() {
	if skipInit == "" {
		nsjail.Init()
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "New:", err)
		os.Exit(2)
	}
	p := policy.Default()
	p.Timeout = policy.Duration(time.Minute)
	if os.Getenv("LIBUSER_NO_FILTER") == "1" {
		p.Seccomp.Profile = "none" // nothing to compile
	}
	res, err := ex.Execute(context.Background(), executor.Request{Args: os.Args[1:], Policy: p})
	if err != nil {
		fmt.Fprintln(os.Stderr, "Execute:", err)
		os.Exit(3)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"status": res.Status, "exit_code": res.ExitCode, "signal": res.Signal,
		"pid1": res.Enforced.Pid1, "stdout": res.Stdout})
}
