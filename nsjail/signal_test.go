package nsjail_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// Signals reach a running program: Sandbox.Signal, and each signal sent
// on Spec.Signals (through executor.Request.Signals), on both backends
// and with the spawn helper or without. The program traps the signal, so
// it sees it whether it is pid 1 or a reaper's child. Signalling a
// sandbox that has ended does nothing.
func TestSignalReachesProgram(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	for _, backend := range []string{"namespaces", "process"} {
		t.Run(backend, func(t *testing.T) {
			ws := testutil.WorldReadableDir(t)
			os.Chmod(ws, 0o777)
			started := filepath.Join(ws, "started")
			inside := "/workspace/started"
			if backend == "process" {
				inside = started
			}
			p := policy.Default()
			p.Backend, p.Workspace, p.Timeout = backend, ws, policy.Duration(time.Minute)
			if backend == "process" {
				// What this is not about, where the kernel lacks Landlock's
				// TCP rules or scopes (the cgroup v2 guest).
				if ex.Host().LandlockABI() < policy.LandlockNet {
					p.Net = policy.NetHost
				}
				if ex.Host().LandlockABI() < policy.LandlockScope {
					p.BestEffort |= policy.DegradeLandlock
				}
			}
			script := `trap 'echo got; exit 4' USR1; touch ` + inside + `; while :; do sleep 0.05; done`

			// Sandbox.Signal.
			spec, _, err := ex.Resolve(executor.Request{Args: []string{"sh", "-c", script}, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			sb, err := nsjail.Start(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if !testutil.WaitFor(time.Minute, func() bool { return testutil.Exists(started) }) {
				sb.Kill()
				t.Fatal("never started")
			}
			if err := sb.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			res, err := sb.Wait()
			if err != nil || res.Status != nsjail.StatusExited || res.ExitCode != 4 || res.Stdout != "got\n" {
				t.Fatalf("Signal: %v %+v", err, res)
			}
			if err := sb.Signal(syscall.SIGUSR1); err != nil {
				t.Errorf("a signal to an ended sandbox: %v", err)
			}

			// Request.Signals.
			os.Remove(started)
			sigs := make(chan os.Signal, 1)
			go func() {
				if testutil.WaitFor(time.Minute, func() bool { return testutil.Exists(started) }) {
					sigs <- syscall.SIGUSR1
				}
			}()
			if backend == "process" {
				// Execute makes the process backend's workspace; the script
				// names ws by its host path, which Landlock (where the host
				// has it) lets the program write only when a bind names it.
				p.Workspace = ""
				p.Mounts = append(p.Mounts, policy.Mount{Type: policy.MountBind, Source: ws, Target: ws})
				p.BestEffort = policy.DegradeLandlock // without Landlock, the bind is listed, not refused
			}
			r, err := ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", script}, Policy: p, Signals: sigs})
			if err != nil || r.Status != nsjail.StatusExited || r.ExitCode != 4 || r.Stdout != "got\n" {
				t.Fatalf("Request.Signals: %v %+v", err, r)
			}
		})
	}
}
