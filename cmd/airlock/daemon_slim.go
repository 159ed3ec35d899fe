//go:build airlock_slim

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlock-sandbox/airlock/policy"
)

// The CLI that scripts/build makes (tag airlock_slim) leaves the daemons
// out: airlock serve's HTTP server, its Prometheus metrics and airlock
// mcp's SDK would add about 1 ms of package initialization and 12 MB of
// binary to every `airlock run`'s start. serve and mcp exec airlock-daemon
// instead, the full airlock built beside it from the same source with the
// same build token: the same process (pid, signals, stdio) goes on as the
// daemon.

func serveCmd(args []string, stdout, stderr io.Writer) int {
	return execDaemon("serve", args, stdout, stderr)
}

func mcpCmd(args []string, stdout, stderr io.Writer) int {
	return execDaemon("mcp", args, stdout, stderr)
}

// execDaemon replaces this process with airlock-daemon COMMAND ARGS. It
// returns only when that fails, having said why.
func execDaemon(command string, args []string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		return usageError(stdout, stderr, &policy.SetupError{Stage: "airlock-daemon", Err: err})
	}
	daemon := executableIn(filepath.Dir(exe), "airlock-daemon")
	if daemon == "" {
		return usageError(stdout, stderr, &policy.UnsupportedError{Control: "airlock " + command,
			Reason: fmt.Sprintf("no airlock-daemon beside %s: this airlock leaves the daemons out and runs that binary for them", exe),
			Fix:    "install airlock-daemon (scripts/build makes it) in the same directory as airlock"})
	}
	err = syscall.Exec(daemon, append([]string{"airlock", command}, args...), os.Environ())
	return usageError(stdout, stderr, &policy.SetupError{Stage: "airlock-daemon", Err: fmt.Errorf("exec %s: %w", daemon, err)})
}
