package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// 200 concurrent mixed requests (ok, timeout, OOM, output floods
// captured and streamed, clients leaving mid-stream), each answered
// correctly; then long runs killed by Drain's deadline, answered too;
// then nothing is left: processes, cgroups, workspaces, fds. Twice: with
// a sandbox per request, and with recycled sandboxes (PoolConfig.Reuse,
// the helpers of AIRLOCK_TEST_BINDIR), where the killed requests end
// their sandboxes and the others pass theirs on.
func TestLoadThenDrain(t *testing.T) {
	t.Run("fresh", func(t *testing.T) {
		loadThenDrain(t, executor.Config{Pool: executor.PoolConfig{Size: 2, Refill: 1}})
	})
	t.Run("reuse", func(t *testing.T) {
		spawn := testutil.RequireReaper(t)
		e := loadThenDrain(t, executor.Config{SpawnPath: spawn,
			Pool: executor.PoolConfig{Size: 2, Refill: 1, Policy: policy.Default(), Reuse: 1000}})
		if e.ex.Capabilities().Limits != "rlimit" && e.ex.PoolStats().Reused == 0 {
			// With a cgroup (and a kernel that resets its peak) the ok
			// runs pass their sandboxes on.
			g, ok := testutil.Cgroups(t)
			if ok && peakResets(t, g) {
				t.Errorf("no request reused a sandbox: %+v", e.ex.PoolStats())
			}
		}
	})
}

// peakResets reports whether this kernel resets a cgroup's memory peak
// (recycling needs it: cgroup v1, or v2 on Linux 6.12 or later).
func peakResets(t *testing.T, parent *cgroups.Parent) bool {
	g, err := parent.New(cgroups.Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	return g.ResetPeak() == nil
}

func loadThenDrain(t *testing.T, ec executor.Config) *env {
	testutil.RequireUserNS(t)
	fds := testutil.CountFDs(t)
	t.Cleanup(func() { // after start's cleanup has closed everything
		if !testutil.WaitFor(5*time.Second, func() bool { return testutil.CountFDs(t) <= fds }) {
			t.Errorf("fds: %d before, %d after", fds, testutil.CountFDs(t))
		}
	})
	e := startWith(t, ec, func(c *server.Config) { c.MaxQueue = 300 })
	cgroups := e.ex.Capabilities().Limits != "rlimit"

	post := func(ctx context.Context, path, body string, stream bool) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://airlock"+path, strings.NewReader(body))
		if stream {
			req.Header.Set("Accept", "application/x-ndjson")
		}
		return e.hc.Do(req)
	}
	// final reads a response to its result (the stream's last line).
	final := func(resp *http.Response) (int, *executor.Result, string, error) {
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil, "", err
		}
		s := strings.TrimSpace(string(b))
		last := s[strings.LastIndexByte(s, '\n')+1:]
		var m struct {
			Result *executor.Result
			Error  *struct{ Class string }
		}
		json.Unmarshal([]byte(last), &m)
		// A plain result is the body itself, and may carry an "error" of
		// its own (a timeout that expired during setup, under load, says
		// why): it is a result when it has a status.
		if m.Result == nil {
			var r executor.Result
			if json.Unmarshal(b, &r) == nil && r.Status != "" {
				m.Result = &r
			}
		}
		class := ""
		if m.Error != nil {
			class = m.Error.Class
		}
		return resp.StatusCode, m.Result, class, nil
	}
	flood := `{"argv":["sh","-c","while :; do echo floodfloodfloodfloodfloodfloodfloodflood; done"],"policy":{"max_output":"16KiB"}}`
	check := func(i int) error {
		ctx := context.Background()
		want := func(resp *http.Response, err error, status nsjail.Status) error {
			if err != nil {
				return err
			}
			code, res, class, err := final(resp)
			if err != nil {
				return err
			}
			if code != 200 || res == nil || res.Status != status {
				return fmt.Errorf("HTTP %d, result %+v, error class %q; want %s", code, res, class, status)
			}
			return nil
		}
		switch i % 10 {
		case 0, 1, 2, 3:
			resp, err := post(ctx, "/v1/run", fmt.Sprintf(`{"argv":["echo","%d"]}`, i), false)
			if err := want(resp, err, nsjail.StatusOK); err != nil {
				return err
			}
		case 4:
			resp, err := post(ctx, "/v1/run", `{"argv":["sleep","30"],"policy":{"timeout":"300ms"}}`, i%20 == 4)
			return want(resp, err, nsjail.StatusTimeout)
		case 5:
			resp, err := post(ctx, "/v1/exec", `{"language":"python","code":"b = bytearray(256 << 20)\nprint('survived')","policy":{"memory":"32MiB"}}`, false)
			if cgroups {
				return want(resp, err, nsjail.StatusMemoryLimit)
			}
			// Without a cgroup an explicit memory limit cannot be
			// enforced: refused (422), nothing ran.
			if err != nil {
				return err
			}
			code, _, class, _ := final(resp)
			if code != 422 || class != "unsupported" {
				return fmt.Errorf("memory limit without cgroups: HTTP %d class %q", code, class)
			}
		case 6:
			resp, err := post(ctx, "/v1/run", flood, false)
			return want(resp, err, nsjail.StatusOutputLimit)
		case 7:
			resp, err := post(ctx, "/v1/run", flood, true)
			return want(resp, err, nsjail.StatusOutputLimit)
		case 8:
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			resp, err := post(ctx, "/v1/run", `{"argv":["sh","-c","while :; do echo tick; sleep 0.02; done"]}`, true)
			if err != nil {
				return err
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || !strings.Contains(line, "tick") {
				return fmt.Errorf("first line %q: %v", line, err)
			}
			cancel()
			resp.Body.Close()
		case 9:
			resp, err := post(ctx, "/v1/exec", `{"language":"python","code":"print(6*7)"}`, false)
			return want(resp, err, nsjail.StatusOK)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := check(i); err != nil {
				errs <- fmt.Errorf("request %d (kind %d): %w", i, i%10, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Long runs, then Drain with a short deadline: each is killed and
	// answered (a retryable 503, or a cancelled result).
	type answer struct {
		code  int
		res   *executor.Result
		class string
		err   error
	}
	answers := make(chan answer, 3)
	for i := range 3 {
		go func() {
			resp, err := post(context.Background(), "/v1/run", `{"argv":["sleep","60"]}`, i == 0)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			code, res, class, err := final(resp)
			answers <- answer{code, res, class, err}
		}()
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return e.metric(t, "airlock_running ") == "airlock_running 2" }) {
		t.Fatalf("long runs not started: %s", e.metric(t, "airlock_running"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := e.srv.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Drain: %v, want the deadline", err)
	}
	for range 3 {
		a := <-answers
		ok := a.err == nil && ((a.code == 503 && a.class == "unavailable") || (a.res != nil && a.res.Status == nsjail.StatusCancelled))
		// The third was queued: refused as draining (503) once Drain began.
		if !ok {
			t.Errorf("long run at drain: %+v", a)
		}
	}
	if code, _, b := e.do(t, "POST", "/v1/run", `{"argv":["true"]}`); code != 503 || !errorOf(t, b).Retryable {
		t.Errorf("after drain: %d %s", code, b)
	}
	return e
}
