package executor_test

import (
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// BenchmarkExecute measures the library path: Execute of /bin/true under
// the default policy, cold (a sandbox built for the request) and warm (a
// prepared sandbox from the pool), beside a bare fork+exec+wait of the
// same program, interleaved. Medians in ms, and overheads over bare:
//
//	go test -run '^$' -bench Execute -benchtime 200x ./executor
//
// Before each warm request the pool is full, as in a daemon between
// bursts; the request's own replacement is prepared while it runs.
func BenchmarkExecute(b *testing.B) {
	testutil.RequireUserNS(b)
	work := testutil.WorldReadableDir(b)
	pol := policy.Default()
	cold, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		b.Fatal(err)
	}
	defer cold.Close()
	const size = 2
	warm, err := executor.New(executor.Config{WorkDir: work, Pool: executor.PoolConfig{Size: size, Policy: pol}})
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close()
	req := executor.Request{Args: []string{"/bin/true"}, Policy: pol}
	run := func(ex *executor.Executor) time.Duration {
		t0 := time.Now()
		res, err := ex.Execute(b.Context(), req)
		d := time.Since(t0)
		if err != nil || res.Status != nsjail.StatusOK {
			b.Fatalf("%v %+v", err, res)
		}
		return d
	}
	var bare, coldT, warmT []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		coldT = append(coldT, run(cold))
		if !testutil.WaitFor(time.Minute, func() bool { return warm.PoolStats().Ready == size }) {
			b.Fatalf("the pool did not refill: %+v", warm.PoolStats())
		}
		before := warm.PoolStats().Warm
		warmT = append(warmT, run(warm))
		if warm.PoolStats().Warm != before+1 {
			b.Fatal("the warm request ran cold")
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6
	}
	mb, mc, mw := med(bare), med(coldT), med(warmT)
	b.ReportMetric(mb, "bare-ms")
	b.ReportMetric(mc, "cold-ms")
	b.ReportMetric(mw, "warm-ms")
	b.ReportMetric(mc-mb, "cold-overhead-ms")
	b.ReportMetric(mw-mb, "warm-overhead-ms")
	b.ReportMetric(0, "ns/op")
}
