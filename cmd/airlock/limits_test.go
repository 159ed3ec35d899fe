package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// forkCount's children and threads outlive the bomb (60 s, not 3: in the
// loaded emulated guest the first could end before the last started);
// the run ends with the program, which takes them with it.
const forkCount = `
import os, sys, time, errno, threading
n = 0
try:
    while n < 200:
        if sys.argv[1] == "fork":
            if os.fork() == 0:
                time.sleep(60); os._exit(0)
        else:
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        n += 1
except (OSError, RuntimeError) as e:
    print(n, type(e).__name__)
`

// With cgroups: I03 memory bomb -> memory_limit near the limit; I01 fork
// and thread bombs stop below --pids; --cpus 0.5 halves CPU time; a
// --cpu-time budget holds across processes (I14). No group is left.
func TestCgroupLimits(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	parent, ok := testutil.Cgroups(t)
	if !ok {
		t.Skip("no usable cgroup here (rootless on cgroup v1): TestRootlessLimitsFailClosed covers it")
	}
	backend := parent.Backend()
	code, res, _ := result(t, "--memory", "64MiB", "--", "python3", "-c", "a = bytearray(300 << 20); print('allocated')")
	if code != 137 || res.Status != "memory_limit" || res.Stdout != "" || res.Enforced.Limits != backend {
		t.Errorf("300 MB under 64 MiB: exit %d status %s limits %s stdout %q", code, res.Status, res.Enforced.Limits, res.Stdout)
	}
	if res.MemoryPeakBytes < 48<<20 || res.MemoryPeakBytes > 80<<20 {
		t.Errorf("peak memory %d MiB, want near 64", res.MemoryPeakBytes>>20)
	}
	for _, kind := range []string{"fork", "thread"} {
		_, res, _ = result(t, "--pids", "32", "--", "python3", "-c", forkCount, kind)
		var n int
		var e string
		if _, err := fmt.Sscan(res.Stdout, &n, &e); err != nil || n >= 32 || n < 20 {
			t.Errorf("%s bomb under --pids 32: %q %q (want 20..31 then an error)", kind, res.Stdout, res.Stderr)
		}
	}
	busy := []string{"--timeout", "2s", "--", "sh", "-c", "while :; do :; done"}
	_, res, _ = result(t, append([]string{"--cpus", "0.5"}, busy...)...)
	r := float64(res.CPUTimeMS) / float64(res.WallTimeMS)
	floor := 0.35
	for try := 0; r < floor && try < 3; try++ {
		// The cap is an upper bound: on a host whose CPUs are taken by
		// other work (the CI's emulated guests beside this pass), the loop
		// gets less than the cap allows. The floor is then 0.7 of what
		// the same loop gets without a cap, measured now (it was 0.16
		// once, capped, when the host was overloaded); and the load comes
		// and goes, so a capped run below it is measured again, beside a
		// new uncapped one (CI's root pass of 2026-12-02: 0.11 capped,
		// the uncapped run after it above 0.5).
		_, free, _ := result(t, busy...)
		if rf := float64(free.CPUTimeMS) / float64(free.WallTimeMS); rf < 0.5 {
			floor = 0.7 * rf
			t.Logf("--cpus 0.5: the uncapped loop got %.2f of a CPU here: the floor is %.2f", rf, floor)
		}
		if r < floor {
			t.Logf("--cpus 0.5: the capped loop got %.2f, below %.2f: measured again", r, floor)
			_, res, _ = result(t, append([]string{"--cpus", "0.5"}, busy...)...)
			r = float64(res.CPUTimeMS) / float64(res.WallTimeMS)
		}
	}
	if res.Status != "timeout" || r < floor || r > 0.65 || res.Enforced.Cgroup == nil || res.Enforced.Cgroup.CPUs != 0.5 {
		t.Errorf("--cpus 0.5: status %s, cpu %d ms over wall %d ms (%.2f), enforced %+v", res.Status, res.CPUTimeMS, res.WallTimeMS, r, res.Enforced.Cgroup)
	}
	_, res, _ = result(t, "--cpu-time", "1s", "--timeout", "20s", "--", "sh", "-c", "(while :; do :; done) & (while :; do :; done) & wait")
	if res.Status != "cpu_limit" || res.CPUTimeMS < 900 || res.CPUTimeMS > 1800 {
		t.Errorf("--cpu-time 1s over two busy processes: status %s, cpu %d ms", res.Status, res.CPUTimeMS)
	}
	// This process's groups are named airlock-<pid>-...; other processes
	// (test packages running in parallel) have their own.
	if left, _ := filepath.Glob(filepath.Join(parent.Dir(), fmt.Sprintf("airlock-%d-*", os.Getpid()))); len(left) != 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

// I13: rootless on a cgroup v1 host an explicit limit is refused, naming
// the control and the fix; --best-effort runs under rlimits and says so;
// the defaults alone run under rlimits, reported.
func TestRootlessLimitsFailClosed(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	if _, ok := testutil.Cgroups(t); ok {
		t.Skip("cgroups usable here: TestCgroupLimits covers it")
	}
	for _, flag := range [][]string{{"--memory", "64MiB"}, {"--pids", "8"}, {"--cpus", "0.5"}} {
		code, out, errOut := airlock(t, "", append(flag, "--", "sh", "-c", "echo RAN")...)
		if code != exitSetup || strings.Contains(out, "RAN") || !strings.Contains(errOut, strings.TrimPrefix(flag[0], "--")) ||
			!strings.Contains(errOut, "--best-effort") || !strings.Contains(errOut, "fix:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", flag, code, out, errOut)
		}
	}
	code, res, _ := result(t, "--best-effort", "--memory", "64MiB", "--", "python3", "-c", "b = bytearray(200 << 20)")
	if code == 0 || !strings.Contains(res.Stderr, "MemoryError") || res.Enforced.Limits != "rlimit" || res.Enforced.Rlimits["data"] != 64<<20 {
		t.Errorf("best effort memory: exit %d, stderr %q, enforced %+v", code, res.Stderr, res.Enforced)
	}
	_, res, _ = result(t, "--best-effort", "--pids", "8", "--", "python3", "-c", forkCount, "fork")
	if fields := strings.Fields(res.Stdout); len(fields) != 2 || fields[1] != "BlockingIOError" && fields[1] != "OSError" {
		t.Errorf("best effort pids: %q %q", res.Stdout, res.Stderr)
	}
	code, res, _ = result(t, "--best-effort", "--cpus", "0.5", "--", "true")
	if code != 0 || !slices.Equal(res.Enforced.NotEnforced, []string{"cpus"}) {
		t.Errorf("best effort cpus: exit %d, %+v", code, res.Enforced)
	}
	code, res, _ = result(t, "--", "true")
	if code != 0 || res.Enforced.Limits != "rlimit" || res.Enforced.Rlimits["nproc"] != 256 {
		t.Errorf("defaults rootless: exit %d, %+v", code, res.Enforced)
	}
}
