package executor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// BenchmarkEgress measures what net allow costs, interleaved, medians in
// ms: a cold /bin/true under net none and under net allow (the init's
// listener, its handoff and the proxy's start and end), and one curl GET
// of a host loopback server: bare, and inside through the proxy.
//
//	go test -run '^$' -bench Egress -benchtime 100x ./executor
func BenchmarkEgress(b *testing.B) {
	testutil.RequireUserNS(b)
	curl := testutil.RequireBinary(b, "curl")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	none := policy.Default()
	none.Net = policy.NetNone
	allow := none
	allow.Net, allow.Egress.Allow = policy.NetAllow, []string{"127.0.0.1:" + srv.URL[len("http://127.0.0.1:"):]}
	run := func(p policy.Policy, args ...string) time.Duration {
		t0 := time.Now()
		res, err := ex.Execute(b.Context(), executor.Request{Args: args, Policy: p})
		d := time.Since(t0)
		if err != nil || res.Status != nsjail.StatusOK {
			b.Fatalf("%v %+v", err, res)
		}
		return d
	}
	var noneT, allowT, bareGet, allowGet []time.Duration
	get := []string{curl, "-sS", "--noproxy", "", "-o", "/dev/null", srv.URL}
	bare := []string{curl, "-sS", "-x", "", "-o", "/dev/null", srv.URL}
	b.ResetTimer()
	for i := range b.N {
		// Alternating which goes first: the second of two runs in a
		// row pays the first's cleanup (its cgroup removal).
		if i%2 == 0 {
			noneT = append(noneT, run(none, "/bin/true"))
			allowT = append(allowT, run(allow, "/bin/true"))
		} else {
			allowT = append(allowT, run(allow, "/bin/true"))
			noneT = append(noneT, run(none, "/bin/true"))
		}
		t0 := time.Now()
		if out, err := exec.Command(bare[0], bare[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		bareGet = append(bareGet, time.Since(t0))
		allowGet = append(allowGet, run(allow, get...))
	}
	b.StopTimer()
	med := testutil.MedianMS
	b.ReportMetric(med(noneT), "none-ms")
	b.ReportMetric(med(allowT), "allow-ms")
	b.ReportMetric(med(allowT)-med(noneT), "allow-overhead-ms")
	b.ReportMetric(med(bareGet), "bare-curl-ms")
	b.ReportMetric(med(allowGet), "allow-curl-ms")
}
