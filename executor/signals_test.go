package executor_test

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// With Config.SetSignals the program starts with exactly the signals of
// SignalsIgnored ignored (SIGCHLD among them: its reaper still reaps it,
// and a shell's wait returns) and those of SignalsBlocked blocked, on
// each path a program is started by: a
// sandbox this process forks (the program pid 1, no reaper), one the
// spawn helper makes, a warm pool's waiting reaper, a reused one, run
// after run. Without it, the program's are what a child of this process
// gets.
func TestSignalDispositions(t *testing.T) {
	testutil.RequireUserNS(t)
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	read := []string{"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"} // what it inherited
	wait := []string{"/bin/sh", "-c", "sleep 0.05 & wait; echo waited $?"}
	bit := func(s syscall.Signal) uint64 { return 1 << (s - 1) }
	set := bit(syscall.SIGCHLD) | bit(syscall.SIGPIPE) | bit(syscall.SIGTERM) | bit(syscall.SIGUSR2) | bit(syscall.SIGHUP) | bit(40)
	blocked := bit(syscall.SIGUSR1) | bit(syscall.SIGWINCH) | bit(syscall.SIGTERM) | bit(45)
	b, err := exec.Command(read[0], read[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	own := string(b)
	for name, cfg := range startPaths(t, pol) {
		for _, setSignals := range []bool{false, true} {
			sub := name + "/inherited"
			want := own
			if setSignals {
				sub = name + "/set"
				want = "SigBlk:\t0000100008004200\nSigIgn:\t0000008000015801\n"
			}
			t.Run(sub, func(t *testing.T) {
				cfg.SetSignals, cfg.SignalsIgnored, cfg.SignalsBlocked = setSignals, set, blocked
				cfg.WorkDir = testutil.WorldReadableDir(t)
				ex, err := executor.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer ex.Close()
				for run := range 2 {
					poolReady(t, ex, cfg)
					res, err := ex.Execute(t.Context(), executor.Request{Args: read, Policy: pol})
					if err != nil || res.Status != nsjail.StatusOK {
						t.Fatalf("run %d: %+v %v", run, res, err)
					}
					if res.Stdout != want {
						t.Errorf("run %d: the program's %q, want %q", run, strings.TrimSpace(res.Stdout), strings.TrimSpace(want))
					}
					poolReady(t, ex, cfg)
					res, err = ex.Execute(t.Context(), executor.Request{Args: wait, Policy: pol})
					if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "waited 0\n" {
						t.Fatalf("run %d, a shell's wait: %+v %v", run, res, err)
					}
				}
			})
		}
	}
}
