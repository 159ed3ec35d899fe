package executor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// A cold run's cgroup may be the spare made ahead, but only for a run
// with exactly the spare's limits, and only once: the run with the same
// limits gets the spare, judged from the host (its program's cgroup and
// that group's memory limit); a run with other limits gets a group of its
// own with its own limit; finished runs' groups go in the background,
// and after Close not one group of this process is left, the spare
// included.
func TestSpareCgroup(t *testing.T) {
	testutil.RequireUserNS(t)
	if _, ok := testutil.Cgroups(t); !ok {
		t.Skip("no per-run cgroups here (rootless on cgroup v1)")
	}
	work := testutil.WorldReadableDir(t)
	ex, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	dir := ex.CgroupDir()
	mine := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("airlock-%d-*", os.Getpid())))
		return m
	}
	pol := func(mib int64) policy.Policy {
		p := policy.Default()
		p.Timeout = policy.Duration(time.Minute)
		p.Memory = policy.Size(mib << 20)
		return p
	}
	quick := func(p policy.Policy) {
		t.Helper()
		if res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/true"}, Policy: p}); err != nil || res.Status != nsjail.StatusOK {
			t.Fatalf("%v %+v", err, res)
		}
	}
	// spare waits until the one group left is the spare, and names it.
	spare := func() string {
		t.Helper()
		var m []string
		if !testutil.WaitFor(10*time.Second, func() bool { m = mine(); return len(m) == 1 }) {
			t.Fatalf("want only the spare left between runs, found %v", m)
		}
		return filepath.Base(m[0])
	}
	// watched runs `sleep` under p and returns its group's name and memory
	// limit, read on the host while it runs.
	watched := func(p policy.Policy) (string, int64) {
		t.Helper()
		m := strconv.Itoa(100000 + int(time.Now().UnixNano()%800000))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := ex.Execute(ctx, executor.Request{Args: []string{"sleep", m}, Policy: p})
			done <- err
		}()
		var pids []int
		if !testutil.WaitFor(10*time.Second, func() bool { pids = testutil.HostProcsWith("sleep", m); return len(pids) == 1 }) {
			t.Fatal("the sleeper never showed up")
		}
		group, limit := memoryGroup(t, pids[0])
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run: %v", err)
		}
		return group, limit
	}

	quick(pol(256))
	quick(pol(256)) // from the second run on, a spare is made
	s1 := spare()
	g, limit := watched(pol(256))
	if g != s1 || limit != 256<<20 {
		t.Errorf("same limits: the run's group %s (memory limit %d), want the spare %s with %d", g, limit, s1, 256<<20)
	}
	s2 := spare()
	if s2 == s1 {
		t.Fatalf("the spare %s served twice", s1)
	}
	g, limit = watched(pol(128))
	if g == s2 || limit != 128<<20 {
		t.Errorf("other limits: the run's group %s (memory limit %d), want a new one (not the spare %s) with %d", g, limit, s2, 128<<20)
	}
	spare()
	ex.Close()
	if left := mine(); len(left) != 0 {
		t.Errorf("after Close, groups left: %v", left)
	}
}

// memoryGroup returns the name of the memory cgroup of pid, and its
// memory limit (v1 memory.limit_in_bytes, v2 memory.max).
func memoryGroup(t *testing.T, pid int) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var file string
		switch {
		case strings.Contains(","+f[1]+",", ",memory,"):
			file = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes")
		case f[0] == "0" && f[1] == "" && testutil.Exists("/sys/fs/cgroup/cgroup.controllers"):
			file = filepath.Join("/sys/fs/cgroup", f[2], "memory.max")
		default:
			continue
		}
		v, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return filepath.Base(f[2]), n
	}
	t.Fatalf("no memory cgroup in\n%s", b)
	return "", 0
}
