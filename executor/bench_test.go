package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
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
// The cold rows report, besides, the init's own steps (init-*: Go runtime
// started, spec read, in its cgroup, jail built, program read, confined,
// filter loaded), from the marks it sends with its reports.
//
// Before each warm request the pool is full, as in a daemon between
// bursts; the request's own replacement is prepared while it runs.
func BenchmarkExecute(b *testing.B) {
	testutil.RequireUserNS(b)
	work := testutil.WorldReadableDir(b)
	pol := policy.Default()
	phases := &phaseLog{}
	// AIRLOCK_BENCH_INIT: the cold runs' init, e.g. a cgo-free one built
	// by `CGO_ENABLED=0 go build ./cmd/airlock-init`; "" = this binary.
	// AIRLOCK_BENCH_SPAWN: with it, the spawn helper that starts it.
	cold, err := executor.New(executor.Config{WorkDir: work, Logger: slog.New(phases), InitPath: os.Getenv("AIRLOCK_BENCH_INIT"),
		SpawnPath: os.Getenv("AIRLOCK_BENCH_SPAWN")})
	if err != nil {
		b.Fatal(err)
	}
	defer cold.Close()
	// The same cold start without Landlock's second layer (as on a host
	// without it), measured in the same loop, in alternating order.
	// (Each logs its phases as cold does, to a log of its own: the same work.)
	plain, err := executor.New(executor.Config{WorkDir: work, Logger: slog.New(&phaseLog{}), InitPath: os.Getenv("AIRLOCK_BENCH_INIT"),
		SpawnPath: os.Getenv("AIRLOCK_BENCH_SPAWN")})
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	executor.SimulateLandlock(plain, 0)
	// And without the reaper (the program pid 1): reaper-ms is the cost
	// of the spawn helper's, or without one of this binary's embedded one.
	noReaper, err := executor.New(executor.Config{WorkDir: work, Logger: slog.New(&phaseLog{}), InitPath: os.Getenv("AIRLOCK_BENCH_INIT"),
		SpawnPath: os.Getenv("AIRLOCK_BENCH_SPAWN")})
	if err != nil {
		b.Fatal(err)
	}
	defer noReaper.Close()
	executor.SimulateNoReaper(noReaper)
	const size = 2
	warmPhases := &phaseLog{}
	warm, err := executor.New(executor.Config{WorkDir: work, Logger: slog.New(warmPhases), Pool: executor.PoolConfig{Size: size, Policy: pol}})
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
	var bare, coldT, plainT, noReaperT, warmT []time.Duration
	b.ResetTimer()
	full := func() {
		if !testutil.WaitFor(time.Minute, func() bool { return warm.PoolStats().Ready == size }) {
			b.Fatalf("the pool did not refill: %+v", warm.PoolStats())
		}
	}
	for i := range b.N {
		// Nothing runs in the background while a row is timed: the pool
		// is full (its refill after the last warm request is done).
		full()
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		// The cold rows in turn, each first as often as the others.
		rows := []func(){
			func() { coldT = append(coldT, run(cold)) },
			func() { plainT = append(plainT, run(plain)) },
		}
		rows = append(rows, func() { noReaperT = append(noReaperT, run(noReaper)) })
		for j := range rows {
			rows[(i+j)%len(rows)]()
		}
		full()
		before := warm.PoolStats().Warm
		warmT = append(warmT, run(warm))
		if warm.PoolStats().Warm != before+1 {
			b.Fatal("the warm request ran cold")
		}
	}
	b.StopTimer()
	med := testutil.MedianMS
	mb, mc, mw := med(bare), med(coldT), med(warmT)
	b.ReportMetric(mb, "bare-ms")
	b.ReportMetric(mc, "cold-ms")
	b.ReportMetric(mw, "warm-ms")
	b.ReportMetric(mc-mb, "cold-overhead-ms")
	if cold.Host().LandlockABI() > 0 {
		mp := med(plainT)
		b.ReportMetric(mp, "cold-nolandlock-ms")
		b.ReportMetric(mc-mp, "landlock-ms")
	}
	mn := med(noReaperT)
	b.ReportMetric(mn, "cold-noreaper-ms")
	b.ReportMetric(mc-mn, "reaper-ms")
	b.ReportMetric(mw-mb, "warm-overhead-ms")
	// Where a cold start's milliseconds go: the median time from the
	// clone to the end of each phase (nsjail logs them at debug level).
	for _, p := range []string{"launched", "init-started", "init-spec-read", "init-in-cgroup", "init-jail-built", "placed",
		"prepared", "init-program-read", "init-confined", "init-filter-loaded", "exec", "exited", "result"} {
		if d := phases.at[p]; len(d) > 0 {
			b.ReportMetric(med(d), "cold-"+p+"-ms")
		}
	}
	// A warm request's phases count from its Start.
	for _, p := range []string{"init-program-read", "init-filter-loaded", "exec", "exited", "result"} {
		if d := warmPhases.at[p]; len(d) > 0 {
			b.ReportMetric(med(d), "warm-"+p+"-ms")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkWaitingReaper is the A/B of a warm pool's reaper started ahead
// (nsjail.Spec.ReaperWaits) against one started with the request: two
// pools of the same filter, one of whose policy names chdir in an allow
// rule (so its sandboxes do not wait: executor reaperMayWait), warm
// /bin/true alternating, each pool full and idle before its run. Medians
// in ms, and the request's phases. It needs the helpers:
//
//	scripts/build /tmp/b/airlock && CGO_ENABLED=0 go build -o /tmp/b/lib-init ./cmd/airlock-init
//	AIRLOCK_BENCH_INIT=/tmp/b/lib-init AIRLOCK_BENCH_SPAWN=/tmp/b/airlock-spawn \
//	  go test -run '^$' -bench WaitingReaper -benchtime 200x ./executor
func BenchmarkWaitingReaper(b *testing.B) {
	initPath, spawnPath := benchHelpers(b)
	work := testutil.WorldReadableDir(b)
	late := policy.Default()
	late.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"chdir"}, Action: policy.ActAllow}}
	type row struct {
		ex     *executor.Executor
		pol    policy.Policy
		phases *phaseLog
		t      []time.Duration
	}
	var rows []*row
	for _, pol := range []policy.Policy{policy.Default(), late} {
		r := &row{pol: pol, phases: &phaseLog{}}
		ex, err := executor.New(executor.Config{WorkDir: work, Logger: slog.New(r.phases), InitPath: initPath, SpawnPath: spawnPath,
			Pool: executor.PoolConfig{Size: 1, Policy: pol}})
		if err != nil {
			b.Fatal(err)
		}
		defer ex.Close()
		r.ex = ex
		rows = append(rows, r)
	}
	var bare []time.Duration
	for i := range b.N {
		for j := range rows {
			r := rows[(i+j)%len(rows)]
			if !testutil.WaitFor(time.Minute, func() bool { return r.ex.PoolStats().Ready == 1 }) {
				b.Fatalf("the pool did not refill: %+v", r.ex.PoolStats())
			}
			time.Sleep(5 * time.Millisecond) // the refill's teardown and start are done
			t0 := time.Now()
			res, err := r.ex.Execute(b.Context(), executor.Request{Args: []string{"/bin/true"}, Policy: r.pol})
			r.t = append(r.t, time.Since(t0))
			if err != nil || res.Status != nsjail.StatusOK {
				b.Fatalf("%v %+v", err, res)
			}
		}
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	if rows[0].ex.PoolStats().Warm != int64(b.N) || rows[1].ex.PoolStats().Warm != int64(b.N) {
		b.Fatalf("runs went cold: %+v %+v", rows[0].ex.PoolStats(), rows[1].ex.PoolStats())
	}
	med := testutil.MedianMS
	b.ReportMetric(med(bare), "bare-ms")
	for i, name := range []string{"waiting", "late"} {
		b.ReportMetric(med(rows[i].t), name+"-ms")
		b.ReportMetric(med(rows[i].t)-med(bare), name+"-overhead-ms")
		for _, p := range []string{"exec", "exited", "result"} {
			if d := rows[i].phases.at[p]; len(d) > 0 {
				b.ReportMetric(med(d), name+"-"+p+"-ms")
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

// benchHelpers returns AIRLOCK_BENCH_INIT (a cgo-free init) and
// AIRLOCK_BENCH_SPAWN (airlock-spawn), or skips b without them.
func benchHelpers(b *testing.B) (initPath, spawnPath string) {
	testutil.RequireUserNS(b)
	initPath, spawnPath = os.Getenv("AIRLOCK_BENCH_INIT"), os.Getenv("AIRLOCK_BENCH_SPAWN")
	if initPath == "" || spawnPath == "" {
		b.Skip("needs AIRLOCK_BENCH_INIT (a cgo-free init) and AIRLOCK_BENCH_SPAWN (airlock-spawn)")
	}
	return initPath, spawnPath
}

// phaseLog is a slog.Handler that keeps nsjail's "phase" debug records.
type phaseLog struct {
	mu sync.Mutex
	at map[string][]time.Duration
}

func (h *phaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *phaseLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *phaseLog) WithGroup(string) slog.Handler            { return h }
func (h *phaseLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "phase" {
		return nil
	}
	var name string
	var d time.Duration
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "phase":
			name = a.Value.String()
		case "since_start":
			d = a.Value.Duration()
		}
		return true
	})
	h.mu.Lock()
	if h.at == nil {
		h.at = map[string][]time.Duration{}
	}
	h.at[name] = append(h.at[name], d)
	h.mu.Unlock()
	return nil
}

// BenchmarkSupervisorHeap measures a cold Execute of /bin/true against
// the supervisor's memory: with no ballast and with 256 MiB of touched
// heap, the init forked by this process (Go's clone copies its page
// tables) or started by the spawn helper (cmd/airlock-spawn, no fork of
// this process). Medians in ms. It needs a cgo-free init and the helper:
//
//	scripts/build /tmp/b/airlock && CGO_ENABLED=0 go build -o /tmp/b/lib-init ./cmd/airlock-init
//	AIRLOCK_BENCH_INIT=/tmp/b/lib-init AIRLOCK_BENCH_SPAWN=/tmp/b/airlock-spawn \
//	  go test -run '^$' -bench SupervisorHeap -benchtime 100x ./executor
func BenchmarkSupervisorHeap(b *testing.B) {
	initPath, spawnPath := benchHelpers(b)
	work := testutil.WorldReadableDir(b)
	req := executor.Request{Args: []string{"/bin/true"}, Policy: policy.Default()}
	launchers := []struct {
		name string
		cfg  executor.Config
	}{
		{"fork", executor.Config{WorkDir: work, InitPath: initPath}},
		{"spawn", executor.Config{WorkDir: work, InitPath: initPath, SpawnPath: spawnPath}},
	}
	var exs []*executor.Executor
	for _, l := range launchers {
		ex, err := executor.New(l.cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer ex.Close()
		exs = append(exs, ex)
	}
	times := map[string][]time.Duration{}
	var ballast [][]byte
	for _, mib := range []int{0, 256} {
		for len(ballast) < mib {
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = 1
			}
			ballast = append(ballast, chunk)
		}
		for range b.N {
			for i, ex := range exs {
				t0 := time.Now()
				res, err := ex.Execute(b.Context(), req)
				d := time.Since(t0)
				if err != nil || res.Status != nsjail.StatusOK {
					b.Fatalf("%v %+v", err, res)
				}
				key := fmt.Sprintf("heap%dMiB-%s-ms", mib, launchers[i].name)
				times[key] = append(times[key], d)
			}
		}
	}
	runtime.KeepAlive(ballast)
	for k, d := range times {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2])/1e6, k)
	}
	b.ReportMetric(0, "ns/op")
}
