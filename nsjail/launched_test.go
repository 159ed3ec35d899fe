package nsjail_test

import (
	"os"
	"path/filepath"
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

// An init launched ahead of its spec (nsjail.Launch, what the CLI does
// while it makes its Executor) runs the program as a cold one does: in
// the run's cgroup from before its jail (v1: sent the tasks files), so
// the memory limit holds and the usage is counted; a spec that does not
// fit is refused and the init can still be closed; a closed or unused
// launch leaves no process behind; Execute falls back to a cold start
// when the launch does not fit, with the same outcome.
func TestLaunched(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	spawn := filepath.Join(bin, "airlock-spawn")
	testutil.RequireFeature(t, "the spawn helper built beside airlock (scripts/build, gcc)", testutil.Exists(spawn))
	cfg := executor.Config{InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: spawn}
	ex, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	parent, haveCgroup := testutil.Cgroups(t)
	// spec resolves p for args, with a fresh cgroup when this host gives
	// one (removed at the test's end).
	spec := func(t *testing.T, p policy.Policy, args ...string) nsjail.Spec {
		t.Helper()
		s, _, err := ex.Resolve(executor.Request{Args: args, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if haveCgroup && s.CgroupLimits != nil {
			g, err := parent.New(*s.CgroupLimits)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Delete() })
			s.Cgroup = g
		}
		return s
	}
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	// launch is executor.Launch for req, which must launch on a cgroup
	// v1 host and must not on v2 (a cold init is born in its cgroup
	// there: nothing to gain); false on v2.
	launch := func(t *testing.T, req executor.Request) (*nsjail.Launched, bool) {
		t.Helper()
		l := executor.Launch(cfg, req)
		if cgroups.HostMode() == cgroups.Unified {
			if l != nil {
				l.Close()
				t.Fatal("executor.Launch launched ahead on a cgroup v2 host")
			}
			return nil, false
		}
		if l == nil {
			t.Fatal("executor.Launch launched nothing for a plain request")
		}
		return l, true
	}

	t.Run("runs in its cgroup", func(t *testing.T) {
		s := spec(t, pol, "/bin/sh", "-c", "echo launched; head -c 30000000 /dev/zero | tail -c 1 >/dev/null")
		l, err := nsjail.Launch(s)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if !l.Usable(&s) {
			t.Fatal("a fitting spec is not usable")
		}
		pid := l.Pid()
		res, err := l.Run(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != nsjail.StatusOK || res.ExitCode != 0 || res.Stdout != "launched\n" {
			t.Fatalf("%+v", res)
		}
		if haveCgroup && (res.MemoryPeakBytes < 1<<20 || res.CPUTimeMS <= 0) {
			t.Errorf("the run's usage was not counted in its cgroup: peak %d bytes, CPU %d ms", res.MemoryPeakBytes, res.CPUTimeMS)
		}
		waitGone(t, "launched init", pid)
		if _, err := l.Start(t.Context(), s); err == nil {
			t.Error("a launched init served a second Start")
		}
	})

	// (Only with a cgroup: rootless on cgroup v1 the memory limit is an
	// rlimit, the program's own, whatever the launch.)
	memoryLimit := func(t *testing.T) {
		p := pol
		p.Memory = 32 << 20
		python := testutil.RequireBinary(t, "python3")
		s := spec(t, p, python, "-I", "-S", "-c", "b = bytearray(200 << 20); print(len(b))")
		l, err := nsjail.Launch(s)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		res, err := l.Run(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != nsjail.StatusMemoryLimit {
			t.Fatalf("want %s, got %+v", nsjail.StatusMemoryLimit, res)
		}
	}
	if haveCgroup {
		t.Run("memory limit holds", memoryLimit)
	}

	t.Run("a spec that does not fit is refused", func(t *testing.T) {
		s := spec(t, pol, "/bin/true")
		l, err := nsjail.Launch(s)
		if err != nil {
			t.Fatal(err)
		}
		other := s
		other.HostNetwork = true
		if l.Usable(&other) {
			t.Error("a spec with the host's network fits an init launched into its own")
		}
		if _, err := l.Start(t.Context(), other); err == nil {
			t.Error("Start ran a spec that does not fit")
		}
		pid := l.Pid()
		l.Close()
		waitGone(t, "launched init", pid)
	})

	t.Run("close without start", func(t *testing.T) {
		s := spec(t, pol, "/bin/true")
		l, err := nsjail.Launch(s)
		if err != nil {
			t.Fatal(err)
		}
		pid := l.Pid()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "launched init", pid)
		if l.Usable(&s) {
			t.Error("a closed launch is usable")
		}
	})

	t.Run("refusals", func(t *testing.T) {
		s := spec(t, pol, "/bin/true")
		r := strings.NewReader("input")
		for name, bad := range map[string]func(*nsjail.Spec){
			"process backend": func(s *nsjail.Spec) { s.Process = true },
			"no spawn helper": func(s *nsjail.Spec) { s.SpawnPath = "" },
			"stdin no file":   func(s *nsjail.Spec) { s.Stdin = r },
			"terminal":        func(s *nsjail.Spec) { s.TTY = os.Stdin },
		} {
			b := s
			bad(&b)
			if l, err := nsjail.Launch(b); err == nil {
				l.Close()
				t.Errorf("%s: launched", name)
			}
		}
	})

	t.Run("execute falls back cold", func(t *testing.T) {
		// Launched for the host's network, run in its own: Execute closes
		// the launch and starts cold, and the outcome is the run's.
		p := pol
		p.Net = policy.NetHost
		l, ok := launch(t, executor.Request{Args: []string{"/bin/true"}, Policy: p})
		if !ok {
			return
		}
		pid := l.Pid()
		// In the init launched with the host's network the program would
		// see the host's interfaces; started cold, it has only lo.
		res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}, Policy: pol, Launched: l})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != nsjail.StatusOK || res.Stdout != "lo\n" {
			t.Fatalf("want the interfaces of a network of its own (lo), got %+v", res)
		}
		waitGone(t, "launched init", pid)
	})

	t.Run("execute runs in a fitting launch", func(t *testing.T) {
		// The CLI's path: executor.Launch, then Execute with the launch.
		// The program waits on its stdin while the host checks that it
		// is the child of the launched init (the sandbox's pid 1, its
		// reaper), then ends.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		defer pw.Close()
		req := executor.Request{Args: []string{"/bin/sh", "-c", "read x; echo got $x"}, Policy: pol, Stdin: pr}
		l, ok := launch(t, req)
		if !ok {
			return
		}
		pid := l.Pid()
		req.Launched = l
		res := executeInside(t, ex, req, pid, pw)
		if res.Status != nsjail.StatusOK || res.Stdout != "got it\n" {
			t.Fatalf("%+v", res)
		}
		waitGone(t, "launched init", pid)
	})
}

// waitGone waits for the process pid (what it is) to be gone, reaped.
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no %s pid (%d)", what, pid)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Errorf("the %s %d is still there", what, pid)
	}
}

// executeInside runs req (its program: read x; echo got $x) and, while
// the program waits on its stdin, checks from the host that it is a child
// of the init pid (the sandbox's pid 1, its reaper); then it writes "it"
// to stdin and returns the result.
func executeInside(t *testing.T, ex *executor.Executor, req executor.Request, pid int, stdin *os.File) *executor.Result {
	t.Helper()
	type outcome struct {
		res *executor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := ex.Execute(t.Context(), req)
		done <- outcome{res, err}
	}()
	if !testutil.WaitFor(10*time.Second, func() bool { return hasChildRunning(pid, "read x") }) {
		t.Errorf("the program is not a child of the init %d", pid)
	}
	stdin.WriteString("it\n")
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.res
}

// hasChildRunning reports whether a child of pid has word in its
// command line.
func hasChildRunning(pid int, word string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(cmd), word) {
			return true
		}
	}
	return false
}
