package nsjail_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// signalTable: programs that end by a signal they raise on themselves,
// or by an exit code. Inside, the reaper is pid 1 and the program its
// child, so each ends as it does bare.
var signalTable = map[string]string{
	"self SIGTERM": `import os, signal; os.kill(os.getpid(), signal.SIGTERM); print("alive")`,
	"self SIGKILL": `import os, signal; os.kill(os.getpid(), signal.SIGKILL); print("alive")`,
	"abort":        `import os; os.abort()`,
	"segfault":     `import ctypes; ctypes.string_at(0)`,
	"self SIGINT":  `import os, signal; os.kill(os.getpid(), signal.SIGINT)`,
	"exit 3":       `import sys; sys.exit(3)`,
	"exit 0":       `print("done")`,
	// An orphan left running: the program's end is the sandbox's.
	"orphan": `import subprocess, sys; subprocess.Popen(["sleep", "100"], start_new_session=True); sys.exit(7)`,
}

// bareStatus runs code bare and returns its wait status.
func bareStatus(t *testing.T, python, code string) syscall.WaitStatus {
	t.Helper()
	cmd := exec.Command(python, "-c", code)
	cmd.Dir = t.TempDir()
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// sameAsBare fails t unless res reports what ws says.
func sameAsBare(t *testing.T, res *nsjail.Result, ws syscall.WaitStatus) {
	t.Helper()
	switch {
	case ws.Signaled():
		if res.Status != nsjail.StatusSignaled || res.Signal != unix.SignalName(ws.Signal()) {
			t.Errorf("inside: %s signal %q exit %d; bare: killed by %v", res.Status, res.Signal, res.ExitCode, ws.Signal())
		}
	case ws.ExitStatus() == 0:
		if res.Status != nsjail.StatusOK || res.Signal != "" {
			t.Errorf("inside: %s signal %q exit %d; bare: exit 0", res.Status, res.Signal, res.ExitCode)
		}
	default:
		if res.Status != nsjail.StatusExited || res.ExitCode != ws.ExitStatus() || res.Signal != "" {
			t.Errorf("inside: %s signal %q exit %d; bare: exit %d", res.Status, res.Signal, res.ExitCode, ws.ExitStatus())
		}
	}
}

// The signal table: each case's result inside is bare's wait status, on
// a cold sandbox and on a warm pool's.
func TestReaperSignalTable(t *testing.T) {
	testutil.RequireUserNS(t)
	python := testutil.RequireBinary(t, "python3")
	reaper := testutil.RequireReaper(t)
	pool, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), SpawnPath: reaper,
		Pool: executor.PoolConfig{Size: 1, Policy: policy.Default()}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for name, code := range signalTable {
		t.Run(name, func(t *testing.T) {
			ws := bareStatus(t, python, code)
			sameAsBare(t, testutil.Run(t, []string{python, "-c", code}, nil), ws)
			res, err := pool.Execute(t.Context(), executor.Request{Args: []string{python, "-c", code}, Policy: policy.Default()})
			if err != nil {
				t.Fatal(err)
			}
			sameAsBare(t, &res.Result, ws)
			if res.Stdout == "alive\n" {
				t.Errorf("warm: the program survived its own signal")
			}
		})
	}
}

// The program is pid 1's child and the leader of a session of its own;
// pid 1 reaps the orphans reparented to it. The orphan's end is waited
// for (its /proc entry goes once it is reaped), not given a fixed 0.2 s:
// in the loaded emulated guest its start and exit can take longer.
func TestReaperTree(t *testing.T) {
	testutil.RequireReaper(t)
	out := testutil.Sh(t, `echo $PPID $$ $(cut -d' ' -f6 /proc/$$/stat); p=$(sleep 0 >/dev/null & echo $!); `+
		`i=0; while [ -e /proc/$p ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; grep -l '^State:.*Z' /proc/[0-9]*/status | wc -l`, nil)
	f := strings.Fields(out)
	if len(f) != 4 || f[0] != "1" || f[1] != f[2] {
		t.Errorf("want the program a child of pid 1, leader of its own session (ppid pid sid): %q", out)
	}
	if len(f) == 4 && f[3] != "0" {
		t.Errorf("%s zombies left unreaped: %q", f[3], out)
	}
}

// The reaper takes a program with many arguments (its own argv holds
// them: a bound on its modes' arguments must not reach them).
func TestReaperManyArgs(t *testing.T) {
	testutil.RequireReaper(t)
	args := []string{"/bin/sh", "-c", `echo $# "$@"; tr '\0' '\n' </proc/1/cmdline | sed '2s/,.*//' | tr '\n' ' ' | head -c 18`, "sh"}
	for i := range 40 {
		args = append(args, strconv.Itoa(i))
	}
	res := testutil.Run(t, args, nil)
	want := "40 " + strings.Join(args[4:], " ") + "\nairlock-reaper 0 4"
	if res.Status != nsjail.StatusOK || res.Stdout != want {
		t.Fatalf("got %s %q, want %q", res.Status, res.Stdout, want)
	}
}

// A signal delivered to the init's host pid (what a caller's forwarding
// does) reaches the program's process group: a trap runs, then the
// program exits with its own code.
func TestReaperForwardsSignals(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{SpawnPath: testutil.RequireReaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c",
		`trap 'echo got TERM; exit 9' TERM; echo up >&2; while :; do sleep 0.05; done`}, Policy: policy.Default()})
	if err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{})
	var once sync.Once
	spec.Stderr = writerFunc(func(b []byte) (int, error) { once.Do(func() { close(up) }); return len(b), nil })
	sb, err := nsjail.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-up:
	case <-time.After(time.Minute):
		t.Fatal("the program did not start")
	}
	if err := unix.Kill(sb.Pid(), unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != nsjail.StatusExited || res.ExitCode != 9 || res.Stdout != "got TERM\n" {
		t.Errorf("after SIGTERM to pid 1: %s exit %d, stdout %q; want the trap's exit 9", res.Status, res.ExitCode, res.Stdout)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// A program the reaper cannot exec is a setup failure of stage "exec"
// with its errno, as without a reaper: never a result of the program.
func TestReaperExecFailure(t *testing.T) {
	testutil.RequireUserNS(t)
	dir := testutil.WorldReadableDir(t)
	if err := os.WriteFile(filepath.Join(dir, "bad"), []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{SpawnPath: testutil.RequireReaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	p := policy.Default()
	p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: dir, Target: "/opt/t"}}
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/opt/t/bad"}, Policy: p})
	var se *policy.SetupError
	if !errors.As(err, &se) || se.Stage != "exec" || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("got %v (%#v), want a setup error of stage exec, ENOENT", err, res)
	}
}

// initSignalsScript sends pid 1 each signal of its arguments, as a
// payload would (kill(1, SIG)), and then goes on to exit 0 by itself.
// Each wait is for pid 1 to have taken what was sent (its pending set,
// ShdPnd in /proc/1/status, empty again), then a last signal is sent and
// taken the same way: pid 1 handles signals in turn, so by then it has
// done with the first ones (passed them on, before the fix). Bounded:
// a pid 1 that never takes them ends the wait, not the test.
const initSignalsScript = `pend() { sed -n 's/^ShdPnd:[[:space:]]*//p' /proc/1/status; }
taken() { i=0; while [ "$(pend)" != 0000000000000000 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; }
for s in "$@"; do kill -s "$s" 1 || exit 9; done; taken
kill -s WINCH 1; taken; echo alive`

// pid 1 behaves as init: a signal that a process of the sandbox sends it
// is dropped, as the host's init drops an ordinary process's, so the
// program that sent it goes on and exits by itself (before, the reaper
// passed each on, and the program died of its own SIGQUIT to pid 1);
// its own SIGTERM to itself still ends it as bare. Both reapers (the
// spawn helper, and this binary's own without one), cold, on a warm
// pool's prepared sandbox (the waiting reaper) and a recycled one (where
// there are per-run cgroups).
func TestReaperIgnoresSandboxSignals(t *testing.T) {
	testutil.RequireUserNS(t)
	work := testutil.WorldReadableDir(t)
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	for _, reaper := range []struct{ name, path string }{{"spawn helper", testutil.RequireReaper(t)}, {"embedded", ""}} {
		t.Run(reaper.name, func(t *testing.T) {
			for _, mode := range []struct {
				name string
				pool executor.PoolConfig
			}{{"cold", executor.PoolConfig{}}, {"warm", executor.PoolConfig{Size: 1, Policy: pol}}, {"recycled", executor.PoolConfig{Size: 1, Policy: pol, Reuse: 4}}} {
				t.Run(mode.name, func(t *testing.T) {
					ex, err := executor.New(executor.Config{WorkDir: work, SpawnPath: reaper.path, Pool: mode.pool})
					if err != nil {
						t.Fatal(err)
					}
					defer ex.Close()
					for _, sig := range []string{"QUIT", "USR1", "TSTP", "TERM", "INT", "HUP"} {
						res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", initSignalsScript, "sh", sig}, Policy: pol})
						if err != nil {
							t.Fatal(err)
						}
						if res.Status != nsjail.StatusOK || res.ExitCode != 0 || res.Stdout != "alive\n" || res.Enforced.Pid1 != "reaper" {
							t.Errorf("kill -%s 1: %s exit %d signal %q, stdout %q, pid1 %q; want ok, exit 0, alive (pid 1 ignores it)",
								sig, res.Status, res.ExitCode, res.Signal, res.Stdout, res.Enforced.Pid1)
						}
					}
					res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", "kill -TERM $$; echo alive"}, Policy: pol})
					if err != nil {
						t.Fatal(err)
					}
					if res.Status != nsjail.StatusSignaled || res.Signal != "SIGTERM" || res.ExitCode != 143 || res.Stdout != "" {
						t.Errorf("self SIGTERM: %s exit %d signal %q, stdout %q; want signaled SIGTERM 143", res.Status, res.ExitCode, res.Signal, res.Stdout)
					}
					// Recycling needs a per-run cgroup (rootless on cgroup
					// v1 there is none: each sandbox then serves one run).
					// ... and a memory peak the kernel can reset (cgroup
					// v1, or v2 on Linux 6.12 or later; the guest's 6.1
					// has none).
					if parent, cg := testutil.Cgroups(t); cg && mode.pool.Reuse > 0 && peakResets(t, parent) && ex.PoolStats().Reused == 0 {
						t.Errorf("no run was served by a recycled sandbox: %+v", ex.PoolStats())
					}
				})
			}
		})
	}
}

// The program's data and address-space limits bind the program, not its
// reaper's exec: the reaper sets them in its child. A small one (16 MiB,
// as an rlimit-only memory limit can be) lets both reapers start the
// program, the embedded one too, whose image (a cgo binary's bss of more
// than 32 MiB) it would not admit; the program has the limit, pid 1 not.
func TestReaperSmallDataLimit(t *testing.T) {
	testutil.RequireUserNS(t)
	for _, reaper := range []struct{ name, path string }{{"spawn helper", testutil.RequireReaper(t)}, {"embedded", ""}} {
		t.Run(reaper.name, func(t *testing.T) {
			ex, err := executor.New(executor.Config{SpawnPath: reaper.path})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", `ulimit -d; ulimit -v; grep -c '^Max data size  *unlimited' /proc/1/limits`}, Policy: policy.Default()})
			if err != nil {
				t.Fatal(err)
			}
			spec.Rlimits = append(spec.Rlimits, nsjail.Rlimit{Resource: unix.RLIMIT_DATA, Cur: 16 << 20, Max: 16 << 20},
				nsjail.Rlimit{Resource: unix.RLIMIT_AS, Cur: 1 << 30, Max: 1 << 30})
			res, err := nsjail.Run(t.Context(), spec)
			if err != nil {
				t.Fatalf("RLIMIT_DATA 16 MiB: %v", err)
			}
			if res.Status != nsjail.StatusOK || res.Stdout != "16384\n1048576\n1\n" || res.Enforced.Pid1 != "reaper" {
				t.Fatalf("RLIMIT_DATA 16 MiB: %s %q %v; want ok, the program's limits, pid 1 without them", res.Status, res.Stdout, res.Error)
			}
		})
	}
}

// peakResets reports whether a cgroup under parent can reset its memory
// peak, which a recycled sandbox needs (executor TestWarmPoolReuse).
func peakResets(t *testing.T, parent *cgroups.Parent) bool {
	t.Helper()
	g, err := parent.New(cgroups.Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	return g.ResetPeak() == nil
}
