package nsjail_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// marker returns a sleep duration unique to this test run, to find the
// sandbox's processes in the host's process table.
func marker() string { return strconv.Itoa(100000 + int(time.Now().UnixNano()%800000)) }

// I09: a program that leaves a setsid'd, double-forked sleeper behind is
// killed at the timeout with everything it started; nothing is left on
// the host.
func TestTimeoutKillsWholeTree(t *testing.T) {
	testutil.RequireUserNS(t)
	m := marker()
	p := policy.Default()
	// 6 s: both sleepers must start before the timeout, in the loaded
	// emulated guest too (a cold start there has taken over 2 s).
	p.Timeout = policy.Duration(6 * time.Second)
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{
		Args:   []string{"/bin/sh", "-c", "setsid sh -c 'sleep " + m + " &' </dev/null >/dev/null 2>&1; exec sleep " + m},
		Policy: p,
	})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := nsjail.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", m)) == 2 }) {
		sb.Kill()
		t.Fatalf("both sleepers never showed up on the host: %v", testutil.HostProcsWith("sleep", m))
	}
	res, err := sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != nsjail.StatusTimeout || res.Signal != "SIGKILL" {
		t.Fatalf("status %s signal %q, want timeout by SIGKILL", res.Status, res.Signal)
	}
	// A generous correctness bound, not a performance check.
	if res.WallTimeMS < 5900 || res.WallTimeMS > 15000 {
		t.Errorf("wall time %d ms for a 6 s timeout", res.WallTimeMS)
	}
	if left := testutil.HostProcsWith("sleep", m); len(left) != 0 {
		t.Fatalf("processes left on the host after the timeout: %v", left)
	}
}

// J02/L03: SIGKILL of the supervisor mid-run leaves no sandbox process,
// whether the supervisor forked the init or the spawn helper started it
// (the helper dies with the supervisor, the init with the helper).
func TestSupervisorDeathKillsSandbox(t *testing.T) {
	testutil.RequireUserNS(t)
	t.Run("fork", func(t *testing.T) { supervisorDeath(t, nil) })
	t.Run("spawn", func(t *testing.T) {
		cfg := launchers(t)["spawn"]
		supervisorDeath(t, []string{initPathEnv + "=" + cfg.InitPath, spawnPathEnv + "=" + cfg.SpawnPath})
	})
}

func supervisorDeath(t *testing.T, env []string) {
	m := marker()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), supervisorEnv+"=sleep "+m), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", m)) == 1 }) {
		t.Fatal("the sandboxed sleeper never started")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", m)) == 0 }) {
		t.Fatalf("sandbox processes survived their supervisor: %v", testutil.HostProcsWith("sleep", m))
	}
	// The dead supervisor could not remove its run's cgroup; the next
	// supervisor to start reaps it.
	parent, ok := testutil.Cgroups(t)
	if !ok {
		return // no cgroups here (rootless on v1): nothing to leave behind
	}
	stale := fmt.Sprintf("%s/airlock-%d-", parent.Dir(), cmd.Process.Pid)
	if left, _ := filepath.Glob(stale + "*"); len(left) != 1 {
		t.Fatalf("want the killed supervisor's cgroup left behind, found %v", left)
	}
	if _, err := executor.New(executor.Config{}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(stale + "*"); len(left) != 0 {
		t.Fatalf("stale cgroup not reaped: %v", left)
	}
}

// I06: a program printing 100 MB is cut at the cap, killed, and the
// supervisor's peak RSS stays near its own baseline plus the cap.
func TestOutputFloodIsCappedAndBounded(t *testing.T) {
	testutil.RequireUserNS(t)
	const limit = 4 << 20
	rss := func(args string) (string, int64) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), supervisorEnv+"="+args, "AIRLOCK_TEST_CAP="+strconv.Itoa(limit))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("supervisor: %v %s", err, out)
		}
		return strings.TrimSpace(string(out)), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
	}
	baseOut, base := rss("/bin/true")
	floodOut, flood := rss("head -c 100000000 /dev/zero")
	if baseOut != "ok 0" {
		t.Fatalf("baseline run: %q", baseOut)
	}
	if floodOut != fmt.Sprintf("output_limit %d", limit) {
		t.Fatalf("flood run: %q, want output_limit with exactly %d bytes kept", floodOut, limit)
	}
	t.Logf("supervisor peak RSS: baseline %d MiB, flood %d MiB, cap %d MiB", base>>20, flood>>20, limit>>20)
	if flood > base+limit+8<<20 {
		t.Fatalf("supervisor peak RSS %d MiB > baseline %d MiB + cap %d MiB + 8 MiB", flood>>20, base>>20, limit>>20)
	}
}

func TestOutputLimitStatus(t *testing.T) {
	res := testutil.Run(t, []string{"/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo done >&2"}, func(p *policy.Policy) {
		p.MaxOutput = 100000
	})
	if res.Status != nsjail.StatusOutputLimit || len(res.Stdout) != 100000 || !res.StdoutTruncated || res.StderrTruncated {
		t.Fatalf("status %s, %d bytes kept, truncated %v/%v", res.Status, len(res.Stdout), res.StdoutTruncated, res.StderrTruncated)
	}
}

func TestKillIsSignaled(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := nsjail.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	sb.Kill()
	res, err := sb.Wait()
	if err != nil || res.Status != nsjail.StatusSignaled || res.Signal != "SIGKILL" {
		t.Fatalf("got %v %+v", err, res)
	}
}

// Cancelling the context kills the sandbox: the result is cancelled,
// with what the program printed before, and the context's error.
func TestContextCancelKills(t *testing.T) {
	testutil.RequireUserNS(t)
	m := marker()
	ctx, cancel := context.WithCancel(t.Context())
	ex, _ := executor.New(executor.Config{})
	defer ex.Close()
	done := make(chan error, 1)
	var res *executor.Result
	go func() {
		var err error
		res, err = ex.Execute(ctx, executor.Request{Args: []string{"sh", "-c", "echo partial; exec sleep " + m}})
		done <- err
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", m)) == 1 }) {
		t.Fatal("sleeper never started")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want a cancellation error", err)
	}
	if res == nil || res.Status != nsjail.StatusCancelled || res.Stdout != "partial\n" || res.ExitCode != 137 || res.Signal != "SIGKILL" {
		t.Fatalf("cancelled result: %+v", res)
	}
	if left := testutil.HostProcsWith("sleep", m); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// Interpreters run a hello program under the default policy.
func TestLanguagesHello(t *testing.T) {
	for _, tc := range []struct {
		bin  string
		args []string
	}{
		{"python3", []string{"python3", "-c", "import threading, subprocess, multiprocessing as mp\nt = threading.Thread(target=lambda: None); t.start(); t.join()\nassert subprocess.run(['true']).returncode == 0\nwith mp.Pool(2) as p: assert p.map(abs, [-1]) == [1]\nprint('hello from python3')"}},
		{"node", []string{"node", "-e", "const {Worker}=require('worker_threads'); new Worker('1',{eval:true}).on('exit',()=>console.log('hello from node'))"}},
		{"bash", []string{"bash", "-c", "x=$(echo hello | tr a-z A-Z | cat); echo \"$x from bash\""}},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			testutil.RequireBinary(t, tc.bin)
			res := testutil.Run(t, tc.args, nil)
			if res.Status != nsjail.StatusOK || !strings.Contains(strings.ToLower(res.Stdout), "hello from "+tc.bin) {
				t.Fatalf("status %s exit %d\nstdout %q\nstderr %q", res.Status, res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}

// A wall clock that runs out before the program is exec'd is a timeout
// result, not an error: the caller learns the outcome, not "no trusted
// outcome".
func TestTimeoutDuringSetupIsAResult(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, _ := executor.New(executor.Config{})
	p := policy.Default()
	p.Timeout = policy.Duration(time.Microsecond)
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "echo ran; exec sleep 10"}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	// Whether the kill lands before exec or just after is a race; either
	// way the outcome is a timeout result, and one killed during setup
	// says so (a program exec'd can still die before it prints).
	res, err := nsjail.Run(t.Context(), spec)
	if err != nil || res.Status != nsjail.StatusTimeout {
		t.Fatalf("got %v %+v", err, res)
	}
	if res.ExitCode != 137 || res.Error != nil && (!strings.Contains(res.Error.Message, "during setup") || !res.Error.Retryable || res.Stdout != "") {
		t.Fatalf("a timeout result with an error that is not a setup timeout: %+v", res)
	}

	// Deterministic: the setup is held (the parent's attach by pid takes
	// 300 ms), so the 1 µs timeout always lands in it.
	t.Run("held-setup", func(t *testing.T) {
		parent, ok := testutil.Cgroups(t)
		if !ok {
			t.Skip("no per-run cgroups here (rootless on cgroup v1): the held setup needs one")
		}
		g, err := parent.New(*spec.CgroupLimits)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Delete()
		spec.Cgroup = slowPlacement{g}
		res, err := nsjail.Run(t.Context(), spec)
		if err != nil || res.Status != nsjail.StatusTimeout || res.Error == nil || !strings.Contains(res.Error.Message, "during setup") || res.Stdout != "" {
			t.Fatalf("timeout during a held setup: %v %+v", err, res)
		}
	})
}

// slowPlacement is a run's cgroup placed by pid (no birth in it, no self
// move) after a 300 ms pause.
type slowPlacement struct{ cgroups.Group }

func (slowPlacement) DirFD() int                     { return -1 }
func (slowPlacement) SelfFiles() ([]*os.File, error) { return nil, nil }
func (g slowPlacement) Add(pid int) error {
	time.Sleep(300 * time.Millisecond)
	return g.Group.Add(pid)
}

// A stream past its cap is output_limit even when the program had already
// ended by the time the supervisor acted on it.
func TestOutputLimitAfterExit(t *testing.T) {
	for i := 0; i < 20; i++ {
		res := testutil.Run(t, []string{"/bin/sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}, func(p *policy.Policy) { p.MaxOutput = 1000 })
		if res.Status != nsjail.StatusOutputLimit || len(res.Stdout) != 1000 || !res.StdoutTruncated {
			t.Fatalf("run %d: status %s, %d bytes, truncated %v", i, res.Status, len(res.Stdout), res.StdoutTruncated)
		}
	}
}

// byPid is a run's cgroup the init is neither born in (v2) nor moves
// itself into (v1): the parent places it by pid, before it sends the
// spec, as on v2 where clone3 is refused.
type byPid struct{ cgroups.Group }

func (byPid) DirFD() int                     { return -1 }
func (byPid) SelfFiles() ([]*os.File, error) { return nil, nil }

// The program and what it forks run in the run's cgroup, in every
// hierarchy that holds it, judged from the host for every thread: on
// cgroup v1 the init's exec thread moves itself there alone (tasks
// files) and the program is that thread after exec; or the parent
// places the init by pid. Either way the init's cgroup namespace is
// rooted there: inside, every hierarchy shows "/".
func TestProgramRunsInItsCgroup(t *testing.T) {
	testutil.RequireUserNS(t)
	parent, ok := testutil.Cgroups(t)
	if !ok {
		t.Skip("no per-run cgroups here (rootless on cgroup v1)")
	}
	t.Run("own", func(t *testing.T) {
		programRunsInItsCgroup(t, parent, func(g cgroups.Group) cgroups.Group { return g })
	})
	t.Run("by-pid", func(t *testing.T) {
		programRunsInItsCgroup(t, parent, func(g cgroups.Group) cgroups.Group { return byPid{g} })
	})
}

func programRunsInItsCgroup(t *testing.T, parent *cgroups.Parent, wrap func(cgroups.Group) cgroups.Group) {
	m := marker()
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "cat /proc/self/cgroup; sleep " + m + " & exec sleep " + m}, Policy: policy.Default()})
	if err != nil || spec.CgroupLimits == nil {
		t.Fatalf("resolve: %v (cgroup limits %v)", err, spec.CgroupLimits)
	}
	pattern := filepath.Join(parent.Dir(), fmt.Sprintf("airlock-%d-*", os.Getpid()))
	before, _ := filepath.Glob(pattern)
	g, err := parent.New(*spec.CgroupLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	after, _ := filepath.Glob(pattern)
	var name string
	for _, d := range after {
		if !slices.Contains(before, d) {
			name = filepath.Base(d)
		}
	}
	spec.Cgroup = wrap(g)
	sb, err := nsjail.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sb.Kill()
		res, err := sb.Wait()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
			if !strings.HasSuffix(line, ":/") {
				t.Errorf("inside, /proc/self/cgroup has %q: the cgroup namespace is not rooted at the run's group", line)
			}
		}
	}()
	var pids []int
	if !testutil.WaitFor(10*time.Second, func() bool { pids = testutil.HostProcsWith("sleep", m); return len(pids) == 2 }) {
		t.Fatalf("both sleepers never showed up on the host: %v", pids)
	}
	// The hierarchies a run's group lives in; "" is the unified one.
	want := map[string]bool{"memory": true, "cpu": true, "cpuacct": true, "pids": true, "freezer": true}
	if parent.Backend() == "cgroup2" {
		want = map[string]bool{"": true}
	}
	for _, pid := range pids {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if len(tasks) == 0 {
			t.Fatalf("pid %d has no tasks", pid)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/cgroup", pid, task.Name()))
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f := strings.SplitN(line, ":", 3)
				if len(f) != 3 || (f[1] == "" && f[0] != "0") {
					continue
				}
				for _, c := range strings.Split(f[1], ",") {
					if want[c] {
						seen++
						if filepath.Base(f[2]) != name {
							t.Errorf("task %d/%s is in %q, not in its run's group %s", pid, task.Name(), line, name)
						}
					}
				}
			}
			if seen != len(want) {
				t.Errorf("task %d/%s: %d of the %d hierarchies found in\n%s", pid, task.Name(), seen, len(want), b)
			}
		}
	}
}

// statsFail is a run's cgroup whose usage cannot be read.
type statsFail struct{ cgroups.Group }

func (statsFail) Stats() (cgroups.Stats, error) { return cgroups.Stats{}, os.ErrPermission }

// A run whose cgroup usage cannot be read after the program ran is no
// setup error (that says the program never ran, and callers retry it):
// the result is the program's, and says what it lacks.
func TestCgroupStatsFailAfterRun(t *testing.T) {
	testutil.RequireUserNS(t)
	parent, ok := testutil.Cgroups(t)
	if !ok {
		t.Skip("no per-run cgroups here (rootless on cgroup v1)")
	}
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "echo ran"}, Policy: policy.Default()})
	if err != nil {
		t.Fatal(err)
	}
	g, err := parent.New(*spec.CgroupLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	spec.Cgroup = statsFail{g}
	res, err := nsjail.Run(t.Context(), spec)
	if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "ran\n" || res.Error == nil || !strings.Contains(res.Error.Message, "cgroup stats unavailable") {
		t.Fatalf("stats failing after the run: %v %+v", err, res)
	}
}

// A copy of the program's stdout held outside the sandbox (as a child
// this process forks at the same moment inherits one until its exec)
// neither delays the result nor loses output: once pid 1 is reaped the
// supervisor reads what the pipe holds and stops, without waiting for an
// EOF that copy withholds (exec.Cmd's WaitDelay would wait 2 s, then drop
// what was unread).
func TestOutputEndsWithThePidNamespace(t *testing.T) {
	testutil.RequireUserNS(t)
	m := marker()
	ex, _ := executor.New(executor.Config{})
	// sleep sums its arguments: 2 s and a unique tag. 2 s, not 0.5: this
	// test must find the sleeper and open its stdout while it lives, in
	// the loaded emulated guest too.
	tag := "0.000" + m
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "echo out; exec sleep 2 " + tag}})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := nsjail.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	if !testutil.WaitFor(10*time.Second, func() bool { pids = testutil.HostProcsWith("sleep", "2", tag); return len(pids) == 1 }) {
		sb.Kill()
		sb.Wait()
		t.Fatal("the sleeper never showed up")
	}
	stranger, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", pids[0]), os.O_WRONLY, 0)
	if err != nil {
		sb.Kill()
		sb.Wait()
		t.Fatal(err)
	}
	defer stranger.Close()
	res, err := sb.Wait()
	if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "out\n" {
		t.Fatalf("with a stranger's copy of stdout open: %v %+v", err, res)
	}
	// The same run without the copy, on this machine at this moment (an
	// emulated guest took 1.95 s for both, with 0.5 s sleeps): waiting
	// for that EOF would add 2 s.
	base, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "echo out; exec sleep 2"}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := nsjail.Run(t.Context(), base)
	if err != nil || alone.Status != nsjail.StatusOK {
		t.Fatalf("without the copy: %v %+v", err, alone)
	}
	if res.WallTimeMS > alone.WallTimeMS+1500 {
		t.Fatalf("with a stranger's copy of stdout open the run took %d ms, %d without: it waited for the copy", res.WallTimeMS, alone.WallTimeMS)
	}
}
