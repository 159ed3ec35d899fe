//go:build airlock_slim

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
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
	return usageError(stdout, stderr, daemonExec(command, args, "airlock "+command, "this airlock leaves the daemons out and runs that binary for them"))
}

// daemonExec replaces this process with airlock-daemon COMMAND ARGS: the
// same process (pid, signals, stdio, environment) goes on as the daemon,
// which refuses to run if it is not of this binary's build (callerEnv).
// It returns only when that fails: control and why name what needed the
// daemon.
func daemonExec(command string, args []string, control, why string) error {
	exe, err := os.Executable()
	if err != nil {
		return &policy.SetupError{Stage: "airlock-daemon", Err: err}
	}
	daemon := executableIn(filepath.Dir(exe), "airlock-daemon")
	if daemon == "" {
		return &policy.UnsupportedError{Control: control,
			Reason: fmt.Sprintf("no airlock-daemon beside %s: %s", exe, why),
			Fix:    "install airlock-daemon (scripts/build makes it) in the same directory as airlock"}
	}
	if stdoutClosedAtStart() {
		// Closed as it was when this process started, not the runtime's
		// /dev/null: the daemon sees what its caller gave (report.go).
		syscall.Close(1)
	}
	env := append(os.Environ(), callerEnv+"="+nsjail.BuildToken())
	restoreTimerSlack()
	restoreIgnoredSignals()
	err = syscall.Exec(daemon, append([]string{"airlock", command}, args...), env)
	return &policy.SetupError{Stage: "airlock-daemon", Err: fmt.Errorf("exec %s: %w", daemon, err)}
}

// The CLI that scripts/build makes also has no cgo, so no libseccomp,
// and no egress proxy (net/http): about 1 ms of every run's start and
// exit (docs/performance.md). It runs a request itself when its filter
// is in the cache (the filters airlock-daemon compiled, under the same
// key: executor.filterCacheID, the build's) and it asks for no --net
// allow; for anything else it runs airlock-daemon with the same command
// and arguments, before it read any of its stdin.

// delegated reports whether this binary runs command through
// airlock-daemon whatever its arguments: those that compile filters
// (doctor's probe sandbox, policy's disassembly, posture's sandboxes)
// when it cannot compile them itself.
func delegated(command string) bool {
	switch command {
	case "doctor", "policy", "posture":
		return !seccomp.CanCompile()
	}
	return false
}

// handsOverInput: this binary may have airlock-daemon run a request, so a
// run or exec whose input can be read only once (readOnce: code on stdin,
// a policy or code file that is a pipe) goes to the daemon before any of
// it is read: what was read could not be read again after the request
// turned out to need the daemon.
func handsOverInput() bool { return true }

// needsDaemon says why airlock-daemon must run a request with policy p
// ("" if this binary can): its --net allow proxy, or a filter that is
// not in ex's cache and that this binary cannot compile.
func needsDaemon(ex *executor.Executor, p policy.Policy) (control, why string) {
	if p.Network() == policy.NetAllow {
		return "network allow-list", "this airlock has no egress proxy and runs that binary for --net allow"
	}
	if !seccomp.CanCompile() && !ex.FilterCached(p) {
		return "seccomp", "this airlock compiles no seccomp filters and runs that binary for one not in its cache"
	}
	return "", ""
}
