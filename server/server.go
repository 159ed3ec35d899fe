package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server/e2b"
)

// Config configures a Server.
type Config struct {
	// Executor runs the requests. Required. The caller closes it after
	// Drain.
	Executor *executor.Executor
	// Policy is the served policy: the defaults of every request and the
	// ceiling of its limits. New validates it; the zero value is the
	// default policy.
	Policy policy.Policy
	// MaxConcurrent bounds the sandboxes running at once. 0 = the number
	// of CPUs.
	MaxConcurrent int
	// MaxQueue is how many more requests may wait for a slot; past it a
	// request is refused with 429. 0 = 4 * MaxConcurrent; negative = none
	// wait.
	MaxQueue int
	// MaxRequest caps a request body in bytes. 0 = 16 MiB.
	MaxRequest int64
	// MaxSessions caps the open sessions. 0 = 64.
	MaxSessions int
	// TenantMaxSessions caps the open sessions of one tenant (see
	// LocalTenant). 0 = MaxSessions.
	TenantMaxSessions int
	// TenantMaxConcurrent caps the runs one tenant has running or queued
	// at once. 0 = no cap beyond the server's (MaxConcurrent + MaxQueue).
	TenantMaxConcurrent int
	// SessionIdle is the longest idle timeout a session may ask for, and
	// its default. 0 = 10 minutes.
	SessionIdle time.Duration
	// Live sandboxes (docs/sandboxes.md): open at most (0 = 64), of one
	// tenant (0 = MaxSandboxes), processes running in one (0 = 64), the
	// output bytes their processes may hold buffered in all and of one
	// tenant (0 = 4 GiB; 0 = MaxSandboxBuffer), the longest lifetime a
	// sandbox may ask for (0 = 24 hours; its idle timeout's maximum is
	// SessionIdle).
	MaxSandboxes, TenantMaxSandboxes, SandboxMaxProcesses int
	MaxSandboxBuffer, TenantMaxSandboxBuffer              int64
	SandboxMaxLifetime                                    time.Duration
	// Logger receives lifecycle events, never payload data. nil = discard.
	Logger *slog.Logger
}

// Server serves an Executor over HTTP. Its Handler is safe for
// concurrent use.
type Server struct {
	cfg Config
	ex  *executor.Executor
	pol policy.Policy // validated: defaults filled in
	log *slog.Logger
	mux *http.ServeMux
	m   *metrics

	slots   chan struct{} // one per running sandbox
	pending atomic.Int64  // running + queued

	mu       sync.Mutex // orders runs.Add before Drain's runs.Wait
	draining bool
	admitted map[string]int // running + queued, by tenant
	drained  chan struct{}  // closed by Drain: queued requests leave
	runs     sync.WaitGroup
	kill     context.Context // cancelled when Drain's deadline passes
	killAll  context.CancelFunc

	smu      sync.Mutex
	sessions map[string]*session

	live sandboxes // the open live sandboxes (sandbox.go)

	langs func() []langInfo

	e2b *e2b.Handler // E2B's protocol (docs/e2b.md)
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Executor == nil {
		return nil, policy.Invalid("executor", "a Server needs an Executor")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Policy.Workspace != "" {
		return nil, policy.Invalid("workspace", "the server makes a workspace per run; leave policy.workspace empty")
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = runtime.NumCPU()
	}
	switch {
	case cfg.MaxQueue == 0:
		cfg.MaxQueue = 4 * cfg.MaxConcurrent
	case cfg.MaxQueue < 0:
		cfg.MaxQueue = 0
	}
	if cfg.MaxRequest <= 0 {
		cfg.MaxRequest = 16 << 20
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 64
	}
	if cfg.TenantMaxSessions <= 0 || cfg.TenantMaxSessions > cfg.MaxSessions {
		cfg.TenantMaxSessions = cfg.MaxSessions
	}
	if cfg.TenantMaxConcurrent < 0 || cfg.TenantMaxConcurrent >= cfg.MaxConcurrent+cfg.MaxQueue {
		cfg.TenantMaxConcurrent = 0 // the server's own bound is the tighter
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.sandboxLimits()
	s := &Server{cfg: cfg, ex: cfg.Executor, pol: cfg.Policy, log: cfg.Logger,
		slots: make(chan struct{}, cfg.MaxConcurrent), drained: make(chan struct{}), sessions: map[string]*session{},
		admitted: map[string]int{}}
	s.kill, s.killAll = context.WithCancel(context.Background())
	s.langs = sync.OnceValue(s.detectVersions)
	s.m = newMetrics(s)
	s.e2b = e2b.New(e2b.Config{Backend: e2b.Live(cfg.Executor, cfg.SandboxMaxProcesses), Policy: s.pol, Tenant: tenantOf,
		MaxSandboxes: cfg.MaxSessions, TenantMaxSandboxes: cfg.TenantMaxSessions, Logger: cfg.Logger})
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	routes := []struct {
		method, path string
		h            http.HandlerFunc
	}{
		{"POST", "/v1/run", s.handleRun},
		{"POST", "/v1/exec", s.handleExec},
		{"POST", "/v1/sessions", s.handleSessionCreate},
		{"GET", "/v1/sessions", s.handleSessionList},
		{"GET", "/v1/sessions/{id}", s.handleSessionGet},
		{"DELETE", "/v1/sessions/{id}", s.handleSessionDelete},
		{"POST", "/v1/sessions/{id}/run", s.handleSessionRun},
		{"POST", "/v1/sessions/{id}/exec", s.handleSessionExec},
		{"GET", "/v1/sessions/{id}/files", s.handleSessionFiles},
		{"GET", "/v1/sessions/{id}/files/{path...}", s.handleSessionDownload},
		{"PUT", "/v1/sessions/{id}/files/{path...}", s.handleSessionUpload},
		{"POST", "/v1/sandboxes", s.handleSandboxCreate},
		{"GET", "/v1/sandboxes", s.handleSandboxList},
		{"GET", "/v1/sandboxes/{id}", s.handleSandboxGet},
		{"DELETE", "/v1/sandboxes/{id}", s.handleSandboxDelete},
		{"PATCH", "/v1/sandboxes/{id}/timeout", s.handleSandboxTimeout},
		{"POST", "/v1/sandboxes/{id}/timeout", s.handleSandboxTimeout},
		{"POST", "/v1/sandboxes/{id}/processes", s.handleProcessStart},
		{"GET", "/v1/sandboxes/{id}/processes", s.handleProcessList},
		{"GET", "/v1/sandboxes/{id}/processes/{pid}", s.handleProcessGet},
		{"GET", "/v1/sandboxes/{id}/processes/{pid}/output", s.handleProcessOutput},
		{"POST", "/v1/sandboxes/{id}/processes/{pid}/stdin", s.handleProcessStdin},
		{"POST", "/v1/sandboxes/{id}/processes/{pid}/signal", s.handleProcessSignal},
		{"POST", "/v1/sandboxes/{id}/processes/{pid}/resize", s.handleProcessResize},
		{"GET", "/v1/sandboxes/{id}/processes/{pid}/pty", s.handleProcessPTY},
		{"GET", "/v1/sandboxes/{id}/files", s.handleSandboxFiles},
		{"GET", "/v1/sandboxes/{id}/files/{path...}", s.handleSandboxDownload},
		{"PUT", "/v1/sandboxes/{id}/files/{path...}", s.handleSandboxUpload},
		{"DELETE", "/v1/sandboxes/{id}/files/{path...}", s.handleSandboxRemove},
		{"", "/v1/sandboxes/{id}/ports/{port}", s.handlePort},
		{"", "/v1/sandboxes/{id}/ports/{port}/{path...}", s.handlePort},
		{"GET", "/v1/capabilities", s.handleCapabilities},
		{"GET", "/healthz", s.handleHealth},
		{"GET", "/metrics", s.m.handler().ServeHTTP},
		{"GET", "/api/v2/runtimes", s.handlePistonRuntimes},
		{"POST", "/api/v2/execute", s.handlePistonExecute},
	}
	for _, p := range e2b.ControlPaths {
		m.Handle(p, s.e2b.Control())
	}
	allowed := map[string][]string{}
	for _, r := range routes {
		if r.method == "" { // any method
			m.HandleFunc(r.path, r.h)
			continue
		}
		m.HandleFunc(r.method+" "+r.path, r.h)
		allowed[r.path] = append(allowed[r.path], r.method)
	}
	// Another method on a route: 405 with an ErrorInfo, as every error.
	for path, methods := range allowed {
		m.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(methods, ", "))
			s.fail(w, http.StatusMethodNotAllowed, policy.Invalid("method", "%s %s: use %s", r.Method, r.URL.Path, strings.Join(methods, " or ")), nil)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, policy.Invalid("path", "%s %s is not a route of this API (see /v1/capabilities, api/openapi.yaml)", r.Method, r.URL.Path), nil)
	})
	s.mux = m
}

// Handler returns the HTTP handler of every route, behind LoopbackGuard.
// Each request is its tenant's (LocalTenant): serve it on a unix socket
// with http.Server.ConnContext = ConnContext.
//
// E2B's data plane (a request with E2b-Sandbox-Id, or a Host of the form
// {port}-{id}.{domain}) carries no API key: the sandbox's own access
// token authorizes it (package e2b), so it is served before the guard
// (a browser cannot send that header without the server's consent).
func (s *Server) Handler() http.Handler {
	api := LoopbackGuard(s.withTenant(s.mux))
	data := s.e2b.Data()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e2b.IsDataPlane(r) {
			data.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// Metrics returns the handler of GET /metrics alone (Prometheus), for a
// front end that serves other routes (airlock mcp over HTTP); behind
// LoopbackGuard, as Handler.
func (s *Server) Metrics() http.Handler { return LoopbackGuard(s.m.handler()) }

// Drain stops the server taking new runs (they, and the requests still
// queued, get 503 with Retry-After) and waits for the running ones; when ctx ends first, it kills them and
// waits for their results. Then it closes every session and every live
// sandbox (their processes killed, their cgroups and workspaces removed). It returns
// ctx's error when it had to kill.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		close(s.drained)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.killAll()
		<-done
	}
	s.closeSessions()
	s.closeSandboxes()
	s.e2b.Close()
	return err
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// statusClientGone is admit's status when the client went away while
// queued: nothing is written (nginx's 499).
const statusClientGone = 499

// errDraining refuses a run once Drain began.
var errDraining = fmt.Errorf("server: draining for shutdown, taking no new runs: %w", policy.ErrUnavailable)

// admit takes a run slot for a request, waiting in the queue while one
// is free; the returned release gives it back. The status is the HTTP
// status of a refusal. The run is counted against its context's tenant
// (TenantMaxConcurrent) from here to release.
func (s *Server) admit(ctx context.Context) (release func(), status int, err error) {
	tenant := ctxTenant(ctx)
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		s.m.rejections.WithLabelValues("draining").Inc()
		return nil, http.StatusServiceUnavailable, errDraining
	}
	if n := s.admitted[tenant]; s.cfg.TenantMaxConcurrent > 0 && n >= s.cfg.TenantMaxConcurrent {
		s.mu.Unlock()
		s.m.rejections.WithLabelValues("tenant_busy").Inc()
		return nil, http.StatusTooManyRequests, fmt.Errorf("server: busy for this credential, %d runs running or queued, its most (--tenant-max-concurrent %d): %w",
			n, s.cfg.TenantMaxConcurrent, policy.ErrUnavailable)
	}
	s.admitted[tenant]++
	s.runs.Add(1)
	s.mu.Unlock()
	// untenant gives back the tenant's count, at every exit below.
	untenant := func() {
		s.mu.Lock()
		if s.admitted[tenant]--; s.admitted[tenant] == 0 {
			delete(s.admitted, tenant)
		}
		s.mu.Unlock()
	}
	limit := int64(s.cfg.MaxConcurrent + s.cfg.MaxQueue)
	if n := s.pending.Add(1); n > limit {
		s.pending.Add(-1)
		s.runs.Done()
		untenant()
		s.m.rejections.WithLabelValues("busy").Inc()
		return nil, http.StatusTooManyRequests, fmt.Errorf("server: busy, %d runs and %d queued (--max-concurrent %d, queue %d): %w",
			s.cfg.MaxConcurrent, s.cfg.MaxQueue, s.cfg.MaxConcurrent, s.cfg.MaxQueue, policy.ErrUnavailable)
	}
	s.m.queued.Inc()
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		s.m.queued.Dec()
		s.pending.Add(-1)
		s.runs.Done()
		untenant()
		return nil, statusClientGone, ctx.Err()
	case <-s.drained:
		s.m.queued.Dec()
		s.pending.Add(-1)
		s.runs.Done()
		untenant()
		s.m.rejections.WithLabelValues("draining").Inc()
		return nil, http.StatusServiceUnavailable, errDraining
	}
	if s.Draining() {
		// A slot and the drain came together: the drain wins.
		<-s.slots
		s.m.queued.Dec()
		s.pending.Add(-1)
		s.runs.Done()
		untenant()
		s.m.rejections.WithLabelValues("draining").Inc()
		return nil, http.StatusServiceUnavailable, errDraining
	}
	s.m.queued.Dec()
	s.m.running.Inc()
	return func() {
		s.m.running.Dec()
		<-s.slots
		s.pending.Add(-1)
		s.runs.Done()
		untenant()
	}, 0, nil
}

// runContext is a run's context: cancelled when its client goes away or
// when Drain's deadline passes.
func (s *Server) runContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.kill, cancel)
	return ctx, func() { stop(); cancel() }
}

// errorBody is every error response.
type errorBody struct {
	Error  *policy.ErrorInfo `json:"error"`
	Result *executor.Result  `json:"result,omitempty"`
}

// statusOf is the HTTP status of an error class.
func statusOf(info *policy.ErrorInfo) int {
	switch info.Class {
	case policy.ClassInvalid:
		return http.StatusBadRequest
	case policy.ClassUnsupported:
		return http.StatusUnprocessableEntity
	case policy.ClassUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail writes err as an error response: status, or its class's when 0;
// res is the library's result when it returned one with the error.
func (s *Server) fail(w http.ResponseWriter, status int, err error, res *executor.Result) {
	info := policy.Describe(err)
	if status == 0 {
		status = statusOf(info)
	}
	if info.Retryable {
		w.Header().Set("Retry-After", "1")
	}
	s.countError(info, res != nil)
	writeJSON(w, status, errorBody{Error: info, Result: res})
}

// countError counts an error response by class, and an invalid request
// refused before anything ran as a rejection too (one count wherever the
// refusal came from: the body's decoding or any later check).
func (s *Server) countError(info *policy.ErrorInfo, ran bool) {
	s.m.errors.WithLabelValues(info.Class).Inc()
	if info.Class == policy.ClassInvalid && !ran {
		s.m.rejections.WithLabelValues("invalid").Inc()
	}
}

// writeJSON writes v as the response, not HTML-escaped.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// RequireToken is RequireTokens with one token (tenant "token:1").
func RequireToken(token string, h http.Handler) (http.Handler, error) {
	if strings.TrimSpace(token) == "" {
		return nil, policy.Invalid("token", "empty")
	}
	ts, err := ParseTokens(strings.NewReader(token))
	if err != nil {
		return nil, err
	}
	return RequireTokens(ts, h), nil
}

// RequireTokens wraps h: every request but GET /healthz must carry
// "Authorization: Bearer TOKEN" (the scheme in any case, RFC 7235) with
// one of ts; others get 401 and run nothing. A request with a token is
// its token's tenant, and skips LoopbackGuard: a browser never sends a
// bearer token of its own accord.
func RequireTokens(ts *Tokens, h http.Handler) http.Handler { return authenticate(ts, h, true) }

// AcceptTokens wraps h as RequireTokens does, but passes a request that
// sends no Authorization header on unchanged (its tenant is then its
// connection's: the unix socket peer's uid). A wrong token is 401.
func AcceptTokens(ts *Tokens, h http.Handler) http.Handler { return authenticate(ts, h, false) }

func authenticate(ts *Tokens, h http.Handler, required bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		scheme, cred, _ := strings.Cut(got, " ")
		cred = strings.TrimLeft(cred, " ")
		if strings.EqualFold(scheme, "Bearer") {
			if t := ts.match(cred); t != "" {
				h.ServeHTTP(w, trusted(r, t))
				return
			}
		}
		if e2b.IsDataPlane(r) {
			h.ServeHTTP(w, r) // its Authorization is envd's Basic user, not a credential
			return
		}
		// E2B's SDKs send the API key (a token) as X-API-KEY, and
		// nothing on a sandbox's data plane, which its access token
		// authorizes (package e2b).
		if key := r.Header.Get("X-API-KEY"); got == "" && key != "" {
			if t := ts.match(key); t != "" {
				h.ServeHTTP(w, trusted(r, t))
				return
			}
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": http.StatusUnauthorized, "message": "wrong API key (X-API-KEY): use a token of airlock serve --token-file"})
			return
		}
		if (r.URL.Path == "/healthz" && r.Method == http.MethodGet) || (!required && got == "") {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
		msg := "missing bearer token"
		if got != "" {
			msg = "wrong bearer token"
		}
		info := policy.Describe(policy.Invalid("authorization", "%s", msg))
		info.Fix = "send Authorization: Bearer <a token of airlock serve --token-file>"
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: info})
	})
}

// isBodyTooLarge reports whether err comes from a body past MaxRequest.
func isBodyTooLarge(err error) bool {
	var mb *http.MaxBytesError
	return errors.As(err, &mb)
}
