package server

import (
	"net/http"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are a Server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg        *prometheus.Registry
	runs       *prometheus.CounterVec   // by kind and status
	duration   *prometheus.HistogramVec // by kind
	errors     *prometheus.CounterVec   // error responses by class
	rejections *prometheus.CounterVec   // refused before running, by reason
	queued     prometheus.Gauge
	running    prometheus.Gauge
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_runs_total",
			Help: "Sandbox runs by route kind (run, exec, session, piston) and result status (error: no result)."}, []string{"kind", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "airlock_run_duration_seconds",
			Help:    "Wall time of a run, from its slot to its result.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_errors_total",
			Help: "Error responses by class (invalid, unsupported, unavailable, internal)."}, []string{"class"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_rejections_total",
			Help: "Requests refused before running: busy (queue full), draining, sessions (cap), sandboxes, sandbox_processes, buffer (and their tenant_ forms), invalid (any field or the body)."}, []string{"reason"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "airlock_queue_length",
			Help: "Requests waiting for a run slot (the autoscaling signal)."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "airlock_running",
			Help: "Sandboxes running now."}),
	}
	pool := func(f func(executor.PoolStats) float64) func() float64 {
		return func() float64 { return f(s.ex.PoolStats()) }
	}
	m.reg.MustRegister(m.runs, m.duration, m.errors, m.rejections, m.queued, m.running,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "airlock_max_concurrent", Help: "The server's --max-concurrent."},
			func() float64 { return float64(s.cfg.MaxConcurrent) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "airlock_pool_ready", Help: "Prepared sandboxes waiting in the warm pool."},
			pool(func(p executor.PoolStats) float64 { return float64(p.Ready) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "airlock_pool_hits_total", Help: "Requests served by a prepared sandbox."},
			pool(func(p executor.PoolStats) float64 { return float64(p.Warm) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "airlock_pool_misses_total", Help: "Requests the pool could have served but found empty."},
			pool(func(p executor.PoolStats) float64 { return float64(p.Cold) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "airlock_pool_reused_total", Help: "Pool hits served by a sandbox that had served a request before (--reuse)."},
			pool(func(p executor.PoolStats) float64 { return float64(p.Reused) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "airlock_pool_failures_total", Help: "Pool preparations that failed."},
			pool(func(p executor.PoolStats) float64 { return float64(p.Failures) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "airlock_sessions", Help: "Open sessions."},
			func() float64 { return float64(s.sessionCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "airlock_sandboxes", Help: "Open live sandboxes."},
			func() float64 { return float64(s.SandboxCount()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe counts one run's outcome.
func (m *metrics) observe(kind string, res *executor.Result, err error, d time.Duration) {
	status := "error"
	if res != nil {
		status = string(res.Status)
	} else if info := policy.Describe(err); info != nil {
		status = "error_" + info.Class
	}
	m.runs.WithLabelValues(kind, status).Inc()
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
}
