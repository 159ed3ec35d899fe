package executor_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// soakKind is one kind of run of the soak and the status it must end in.
type soakKind struct {
	name string
	req  executor.Request
	want nsjail.Status
}

const forkBomb = `
import os
first = os.getpid()  # the program: pid 1's child, under the reaper
try:
    while True:
        os.fork()
except BlockingIOError:
    if os.getpid() == first:
        print("limit")
`

func soakKinds(withCgroup bool) []soakKind {
	short := policy.Policy{Timeout: policy.Duration(300 * time.Millisecond)}
	kill := policy.Policy{Seccomp: policy.Seccomp{Rules: []policy.SyscallRule{{Names: []string{"getppid"}, Action: policy.ActKill}}}}
	flood := policy.Policy{MaxOutput: 64 << 10}
	// The bomb ends in a few hundred ms; its timeout is a backstop. It
	// was 2 s, which a loaded host (the CI's emulated guest beside the
	// soak) once took with the bomb done: pid 1 had printed "limit", and
	// the sandbox had had 0.3 s of CPU in its 2.1 s.
	bomb := policy.Policy{Timeout: policy.Duration(10 * time.Second), BestEffort: policy.DegradeLimits, Pids: 16}
	kinds := []soakKind{
		{"ok", executor.Request{Args: []string{"true"}}, nsjail.StatusOK},
		{"timeout", executor.Request{Args: []string{"sleep", "10"}, Policy: short}, nsjail.StatusTimeout},
		{"seccomp kill", executor.Request{Language: "python", Code: "import os; os.getppid()", Policy: kill}, nsjail.StatusSeccompViolation},
		{"output flood", executor.Request{Args: []string{"head", "-c", "10000000", "/dev/zero"}, Policy: flood}, nsjail.StatusOutputLimit},
		// Every process forks until the task limit says EAGAIN, then exits;
		// the program's first process reports that it hit the limit.
		{"fork bomb", executor.Request{Language: "python", Code: forkBomb, Policy: bomb}, nsjail.StatusOK},
	}
	if withCgroup {
		oom := policy.Policy{Memory: 32 << 20}
		kinds = append(kinds, soakKind{"oom", executor.Request{Language: "python", Code: "a = bytearray(200 << 20)", Policy: oom}, nsjail.StatusMemoryLimit})
	}
	return kinds
}

// BenchmarkSoak runs b.N mixed sandboxes (ok, timeout, seccomp kill,
// output flood, fork bomb and, with a cgroup, OOM) two at a time and
// checks every result, then that nothing leaked: processes, workspaces,
// cgroups, fds. It reports runs per second. scripts/soak runs 2,000:
//
//	go test -run '^$' -bench Soak -benchtime 2000x ./executor
func BenchmarkSoak(b *testing.B) {
	testutil.RequireUserNS(b)
	work := testutil.WorldReadableDir(b)
	ex, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		b.Fatal(err)
	}
	kinds := soakKinds(ex.Capabilities().Limits != "rlimit")
	fds := countFDs(b)
	var next atomic.Int64
	var mu sync.Mutex
	bad := map[string]int{}
	counts := map[string]int{}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				k := kinds[i%len(kinds)]
				res, err := ex.Execute(b.Context(), k.req)
				ok := err == nil && res.Status == k.want && (k.name != "fork bomb" || res.Stdout == "limit\n")
				mu.Lock()
				counts[k.name]++
				if !ok {
					bad[fmt.Sprintf("%s: %v %v", k.name, err, res)]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	ex.Close()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(0, "ns/op")
	for what, n := range bad {
		b.Errorf("%d wrong results: %s", n, what)
	}
	checkNothingLeft(b, ex, work, fds)
	if left := testutil.HostProcsWith("sleep", "10"); len(left) != 0 {
		b.Errorf("processes left: %v", left)
	}
	b.Logf("%d runs in %v (%v): %.1f runs/s", b.N, elapsed.Round(time.Millisecond), counts, float64(b.N)/elapsed.Seconds())
}
