package server_test

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// BenchmarkServedOverhead is what serving adds to a warm run: /bin/true
// from the warm pool through Execute in this process (direct), and the
// same through the server and the Go client over a unix socket (served),
// alternating, each with the pool full and idle before it; and an empty
// round trip (GET /healthz). The server's helpers are the ones airlock
// serve uses (AIRLOCK_TEST_BINDIR: airlock-init, airlock-spawn). Medians:
//
//	AIRLOCK_TEST_BINDIR=DIR go test -run '^$' -bench ServedOverhead -benchtime 200x ./server
func BenchmarkServedOverhead(b *testing.B) {
	testutil.RequireUserNS(b)
	bin := testutil.BinDir(b)
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(b),
		InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: filepath.Join(bin, "airlock-spawn"),
		Pool: executor.PoolConfig{Size: 1, Refill: 1, Policy: policy.Default()}})
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	srv, err := server.New(server.Config{Executor: ex, MaxConcurrent: 2})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(b.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(), ConnContext: server.ConnContext}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := client.New("unix:"+sock, "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req := executor.Request{Args: []string{"/bin/true"}}
	var direct, served, health []time.Duration
	timed := func(d *[]time.Duration, f func() error) {
		// The pool full, and its refill's last steps over.
		if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 1 }) {
			b.Fatalf("the pool did not refill: %+v", ex.PoolStats())
		}
		time.Sleep(5 * time.Millisecond)
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*d = append(*d, time.Since(t0))
	}
	for i := range b.N {
		rows := []func(){
			func() {
				timed(&direct, func() error { _, err := ex.Execute(b.Context(), req); return err })
			},
			func() {
				timed(&served, func() error { _, err := c.Execute(b.Context(), req); return err })
			},
		}
		rows[i%2]()
		rows[(i+1)%2]()
		timed(&health, func() error {
			r, err := hc.Get("http://airlock/healthz")
			if err == nil {
				r.Body.Close()
			}
			return err
		})
	}
	b.StopTimer()
	med := testutil.MedianMS
	b.ReportMetric(med(direct), "direct-ms")
	b.ReportMetric(med(served), "served-ms")
	b.ReportMetric(med(served)-med(direct), "serving-ms")
	b.ReportMetric(med(health), "healthz-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSandboxServed is what serving adds to live sandboxes, side by
// side in one run (interleaved): create a sandbox cold through the
// library (create-cold-direct), from the warm pool of live sandboxes
// (PoolConfig.Live, refilled before each, untimed) through the library
// (create-warm-direct) and through the server and the Go client over a
// unix socket (create-warm-served); a process (/bin/true, foreground) into
// a live sandbox through the library (proc-direct) and served
// (proc-served), beside a served one-shot /v1/run from the warm pool
// (run-served) and a bare start of /bin/true (bare). Medians:
//
//	AIRLOCK_TEST_BINDIR=DIR go test -run '^$' -bench SandboxServed -benchtime 200x ./server
func BenchmarkSandboxServed(b *testing.B) {
	testutil.RequireUserNS(b)
	bin := testutil.BinDir(b)
	cfg := executor.Config{WorkDir: testutil.WorldReadableDir(b),
		InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: filepath.Join(bin, "airlock-spawn")}
	cold, err := executor.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer cold.Close()
	p := policy.Default()
	if !cold.Host().Has(policy.CheckCgroup) {
		p.BestEffort = policy.DegradeLimits
	}
	cfg.Pool = executor.PoolConfig{Size: 1, Refill: 1, Policy: p, Live: 1}
	ex, err := executor.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	srv, err := server.New(server.Config{Executor: ex, MaxConcurrent: 2, Policy: p, MaxSandboxes: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Drain(context.Background())
	sock := filepath.Join(b.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(), ConnContext: server.ConnContext}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := client.New("unix:"+sock, "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := b.Context()
	direct, err := cold.NewSandbox(ctx, executor.SandboxConfig{Policy: srv.Policy()})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	served, _, err := c.CreateSandbox(ctx, client.SandboxConfig{})
	if err != nil {
		b.Fatal(err)
	}
	var createCold, createWarm, createServed, procDirect, procServed, runServed, bare []time.Duration
	timed := func(d *[]time.Duration, f func() error) {
		time.Sleep(2 * time.Millisecond)
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*d = append(*d, time.Since(t0))
	}
	liveReady := func() {
		if !testutil.WaitFor(time.Minute, func() bool { return ex.LiveReady() == 1 }) {
			b.Fatal("the live pool did not refill")
		}
	}
	truth := []string{"/bin/true"}
	var warmHits int
	rows := []func(){
		func() {
			var sb *executor.Sandbox
			timed(&createCold, func() (err error) {
				sb, err = cold.NewSandbox(ctx, executor.SandboxConfig{Policy: srv.Policy()})
				return err
			})
			sb.Close()
		},
		func() {
			liveReady()
			var sb *executor.Sandbox
			timed(&createWarm, func() (err error) {
				sb, err = ex.NewSandbox(ctx, executor.SandboxConfig{Policy: srv.Policy()})
				return err
			})
			if ex.LiveReady() == 0 {
				warmHits++
			}
			sb.Close()
		},
		func() {
			liveReady()
			var sb *client.Sandbox
			timed(&createServed, func() (err error) { sb, _, err = c.CreateSandbox(ctx, client.SandboxConfig{}); return err })
			if ex.LiveReady() == 0 {
				warmHits++
			}
			sb.Delete(ctx)
		},
		func() {
			timed(&procDirect, func() error {
				_, err := direct.Run(ctx, executor.ProcessRequest{Argv: truth}, nil)
				return err
			})
		},
		func() {
			timed(&procServed, func() error { _, err := served.Exec(ctx, client.ProcessSpec{Argv: truth}, nil, nil); return err })
		},
		func() {
			if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 1 }) {
				b.Fatalf("the pool did not refill: %+v", ex.PoolStats())
			}
			timed(&runServed, func() error { _, err := c.Execute(ctx, executor.Request{Args: truth}); return err })
		},
		func() { timed(&bare, func() error { return exec.Command("/bin/true").Run() }) },
	}
	for i := range b.N {
		for j := range rows {
			rows[(i+j)%len(rows)]()
		}
	}
	b.StopTimer()
	med := testutil.MedianMS
	b.ReportMetric(med(bare), "bare-ms")
	b.ReportMetric(med(createCold), "create-cold-direct-ms")
	b.ReportMetric(med(createWarm), "create-warm-direct-ms")
	b.ReportMetric(med(createServed), "create-warm-served-ms")
	b.ReportMetric(float64(warmHits)/float64(2*b.N), "warm-hit-ratio")
	b.ReportMetric(med(procDirect), "proc-direct-ms")
	b.ReportMetric(med(procServed), "proc-served-ms")
	b.ReportMetric(med(runServed), "run-served-ms")
	b.ReportMetric(0, "ns/op")
}
