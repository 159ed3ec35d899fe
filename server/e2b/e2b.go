// Package e2b serves E2B's protocol (e2b.dev) over airlock's live
// sandboxes, so that the official SDKs (npm e2b and
// @e2b/code-interpreter, and the frameworks that reach sandboxes through
// them) drive airlock unchanged: E2B_API_URL and E2B_SANDBOX_URL point at
// airlock serve, E2B_API_KEY is one of its tokens.
//
// Three planes, told apart by the request (IsDataPlane):
//
//   - the control plane (Control): /sandboxes and /v2/sandboxes: create,
//     connect, describe, list, set timeout, pause, resume, kill; the
//     caller is its serve tenant (the API key is a serve token);
//   - envd (port 49983): the Connect RPCs process.Process and
//     filesystem.Filesystem, and HTTP /files and /health;
//   - the code interpreter (port 49999): /execute and /contexts, each
//     context a persistent interpreter process in the sandbox;
//   - and any other port: an HTTP reverse proxy to that port inside the
//     sandbox (getHost(port) is {port}-{id}.{domain}).
//
// The data plane is reached by a request carrying E2b-Sandbox-Id (and
// E2b-Sandbox-Port) or by a Host of the form {port}-{id}.{domain}; it
// carries no API key, and is authorized by the sandbox's own access
// tokens, compared in constant time: envdAccessToken (X-Access-Token) on
// envd, and that or trafficAccessToken (E2B-Traffic-Access-Token) on the
// other ports. A sandbox is its creator's tenant's: any other gets 404.
package e2b

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// The ports E2B's SDKs address.
const (
	EnvdPort        = 49983
	InterpreterPort = 49999
)

// envdVersion is the envd version airlock answers: 0.6.4 turns on every
// feature gate of the SDKs it was read from (e2b 2.51); what those
// features need and airlock lacks is refused, request by request.
const envdVersion = "0.6.4"

// Templates are the template names served, each the served policy.
var Templates = []string{"base", "code-interpreter-v1"}

// Config configures a Handler.
type Config struct {
	// Backend makes the sandboxes; nil refuses every route (501) saying
	// that this build has no live sandboxes.
	Backend Backend
	// Policy is every template's policy (its Workspace must be "").
	Policy policy.Policy
	// Tenant is the serve tenant of a control-plane request.
	Tenant func(*http.Request) (string, error)
	// MaxSandboxes caps the open sandboxes (0 = 64), TenantMaxSandboxes
	// one tenant's (0 = MaxSandboxes).
	MaxSandboxes, TenantMaxSandboxes int
	// MaxTimeout caps a sandbox's lifetime (0 = 24 hours).
	MaxTimeout time.Duration
	// Logger receives lifecycle events, never payload data.
	Logger *slog.Logger
}

// Handler serves E2B's protocol. Safe for concurrent use.
type Handler struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	boxes    map[string]*sandbox
	pending  int            // creates under way
	tpending map[string]int // by tenant
	closed   bool
}

// sandbox is one E2B sandbox: a live sandbox and what the protocol adds.
type sandbox struct {
	id, tenant, template string
	box                  Box
	envdToken            string
	trafficToken         string
	started              time.Time
	metadata             map[string]string
	env                  map[string]string // create's envVars: every process's (its own override them)
	cpus                 int
	memoryMB             int64
	domain               string
	ci                   *interpreter
}

// New returns a Handler for cfg.
func New(cfg Config) *Handler {
	if cfg.MaxSandboxes <= 0 {
		cfg.MaxSandboxes = 64
	}
	if cfg.TenantMaxSandboxes <= 0 || cfg.TenantMaxSandboxes > cfg.MaxSandboxes {
		cfg.TenantMaxSandboxes = cfg.MaxSandboxes
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tenant == nil {
		cfg.Tenant = func(*http.Request) (string, error) { return "local", nil }
	}
	return &Handler{cfg: cfg, log: cfg.Logger, boxes: map[string]*sandbox{}, tpending: map[string]int{}}
}

// ControlPaths are the path patterns the control plane answers (each
// with and without a trailing subtree).
var ControlPaths = []string{"/sandboxes", "/sandboxes/", "/v2/sandboxes", "/v2/sandboxes/"}

// Close kills every sandbox and refuses new ones. Idempotent.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	var all []*sandbox
	for _, s := range h.boxes {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		h.kill(s)
	}
}

// Count is the number of open sandboxes.
func (h *Handler) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.boxes)
}

// apiError is the control plane's error body.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func fail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Code: status, Message: fmt.Sprintf(format, args...)})
}

// failErr answers err with the status of its class.
func failErr(w http.ResponseWriter, what string, err error) {
	info := policy.Describe(err)
	status := http.StatusInternalServerError
	switch info.Class {
	case policy.ClassInvalid:
		status = http.StatusBadRequest
	case policy.ClassUnsupported:
		status = http.StatusNotImplemented
	case policy.ClassUnavailable:
		status = http.StatusServiceUnavailable
	}
	fail(w, status, "%s", describe(what, info))
}

// describe is an error's message with its fix, once.
func describe(what string, info *policy.ErrorInfo) string {
	msg := what + ": " + info.Message
	if info.Fix != "" && !strings.Contains(info.Message, info.Fix) {
		msg += " (" + info.Fix + ")"
	}
	return msg
}

func newToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tokenEqual compares in constant time (lengths may differ: a mismatch).
func tokenEqual(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// dataHost is {port}-{id}.{domain}: getHost(port)'s name.
var dataHost = regexp.MustCompile(`^([0-9]{1,5})-([0-9a-zA-Z_-]{8,64})\.[^:]+(:[0-9]+)?$`)

// IsDataPlane reports whether r is for a sandbox's data plane (envd,
// the code interpreter or an exposed port) rather than a server's API.
func IsDataPlane(r *http.Request) bool {
	return r.Header.Get("E2b-Sandbox-Id") != "" || dataHost.MatchString(r.Host)
}

// target is the sandbox and port a data-plane request is for.
func target(r *http.Request) (id string, port int, err error) {
	if id = r.Header.Get("E2b-Sandbox-Id"); id != "" {
		p := r.Header.Get("E2b-Sandbox-Port")
		if p == "" {
			return "", 0, errors.New("E2b-Sandbox-Id without E2b-Sandbox-Port: send the port too (49983 envd, 49999 the code interpreter)")
		}
		port, err = strconv.Atoi(p)
		if err != nil || port < 1 || port > 65535 {
			return "", 0, fmt.Errorf("E2b-Sandbox-Port %q: want a port number", p)
		}
		return id, port, nil
	}
	m := dataHost.FindStringSubmatch(r.Host)
	if m == nil {
		return "", 0, fmt.Errorf("host %q is not {port}-{sandbox id}.{domain}", r.Host)
	}
	port, _ = strconv.Atoi(m[1])
	if port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("host %q: port %d out of range", r.Host, port)
	}
	return m[2], port, nil
}

// lookup is tenant's sandbox id, or nil (another tenant's is nil too).
func (h *Handler) lookup(id, tenant string) *sandbox {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.boxes[id]
	if s == nil || s.tenant != tenant {
		return nil
	}
	return s
}

// Data serves the data plane.
func (h *Handler) Data() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.Backend == nil {
			fail(w, http.StatusNotImplemented, "this airlock build has no live sandboxes: E2B's protocol needs them")
			return
		}
		id, port, err := target(r)
		if err != nil {
			fail(w, http.StatusBadRequest, "%v", err)
			return
		}
		h.mu.Lock()
		s := h.boxes[id]
		h.mu.Unlock()
		// An unknown id is 502, what the SDKs read as a sandbox that is
		// gone (isRunning: false, a timeout error); a known one without
		// its token 401. Ids are not secrets (getHost's names hold
		// them); the tokens are.
		access := r.Header.Get("X-Access-Token")
		traffic := r.Header.Get("E2B-Traffic-Access-Token")
		ok := s != nil && (tokenEqual(access, s.envdToken) || (port != EnvdPort && tokenEqual(traffic, s.trafficToken)))
		if !ok {
			if s == nil {
				fail(w, http.StatusBadGateway, "sandbox %q is not running (it was killed, timed out, or never existed)", id)
				return
			}
			w.Header().Set("WWW-Authenticate", `Token realm="e2b-sandbox"`)
			fail(w, http.StatusUnauthorized, "sandbox %q: send its envdAccessToken as X-Access-Token (or, on a port other than envd's, its trafficAccessToken as E2B-Traffic-Access-Token)", id)
			return
		}
		switch s.box.State() {
		case "closed":
			fail(w, http.StatusBadGateway, "sandbox %q is not running: %v", id, s.box.Err())
			return
		case "paused":
			// Its processes are frozen: nothing would answer. (E2B's
			// paused sandboxes do not answer either; isRunning is false.)
			fail(w, http.StatusBadGateway, "sandbox %q is paused: resume it (Sandbox.connect) first", id)
			return
		}
		switch port {
		case EnvdPort:
			h.serveEnvd(w, r, s)
		case InterpreterPort:
			h.serveInterpreter(w, r, s)
		default:
			h.serveProxy(w, r, s, port)
		}
	})
}

// Control serves the control plane (ControlPaths).
func (h *Handler) Control() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.Backend == nil {
			fail(w, http.StatusNotImplemented, "this airlock build has no live sandboxes: E2B's protocol needs them")
			return
		}
		tenant, err := h.cfg.Tenant(r)
		if err != nil {
			failErr(w, "tenant", err)
			return
		}
		p := strings.TrimSuffix(r.URL.Path, "/")
		v2 := strings.HasPrefix(p, "/v2/")
		p = strings.TrimPrefix(p, "/v2")
		rest, _ := strings.CutPrefix(p, "/sandboxes")
		rest = strings.TrimPrefix(rest, "/")
		id, action, _ := strings.Cut(rest, "/")
		switch {
		case id == "" && r.Method == http.MethodPost:
			h.create(w, r, tenant)
		case id == "" && r.Method == http.MethodGet:
			h.list(w, r, tenant, v2)
		case id == "":
			methodNotAllowed(w, r, "GET, POST")
		case strings.Contains(action, "/"):
			fail(w, http.StatusNotFound, "%s %s is not a route of E2B's API", r.Method, r.URL.Path)
		default:
			s := h.lookup(id, tenant)
			if s == nil {
				fail(w, http.StatusNotFound, "sandbox %q not found", id)
				return
			}
			h.sandboxRoute(w, r, s, action, v2)
		}
	})
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	fail(w, http.StatusMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, allow)
}

func (h *Handler) sandboxRoute(w http.ResponseWriter, r *http.Request, s *sandbox, action string, v2 bool) {
	want := map[string]string{"": "GET, DELETE", "timeout": "POST", "pause": "POST", "resume": "POST", "connect": "POST"}
	allow, known := want[action]
	if !known {
		// metrics, logs, fork, snapshots, network, refreshes: not served.
		fail(w, http.StatusNotImplemented, "%s %s: airlock does not serve E2B's %q operation (supported: create, connect, get, list, timeout, pause, resume, kill)", r.Method, r.URL.Path, action)
		return
	}
	if !strings.Contains(allow, r.Method) {
		methodNotAllowed(w, r, allow)
		return
	}
	switch action {
	case "":
		if r.Method == http.MethodGet {
			writeJSON(w, http.StatusOK, h.detail(s))
			return
		}
		h.kill(s)
		w.WriteHeader(http.StatusNoContent)
	case "timeout":
		var b struct {
			Timeout *int64 `json:"timeout"`
		}
		if !decodeBody(w, r, &b) {
			return
		}
		if b.Timeout == nil {
			fail(w, http.StatusBadRequest, "timeout: required (seconds)")
			return
		}
		d, ok := h.lifetime(w, *b.Timeout)
		if !ok {
			return
		}
		if err := s.box.SetTimeout(d); err != nil {
			failErr(w, "timeout", err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "pause":
		var b struct {
			Memory *bool `json:"memory"`
		}
		if !decodeBody(w, r, &b) {
			return
		}
		if b.Memory != nil && !*b.Memory {
			fail(w, http.StatusBadRequest, "memory: false (a filesystem-only pause) is not supported: airlock pauses by freezing the processes, memory kept")
			return
		}
		if s.box.State() == "paused" {
			fail(w, http.StatusConflict, "sandbox %q is already paused", s.id)
			return
		}
		if err := s.box.Pause(); err != nil {
			failErr(w, "pause", err)
			return
		}
		h.log.Info("e2b sandbox paused", "id", s.id, "tenant", s.tenant)
		w.WriteHeader(http.StatusNoContent)
	case "resume", "connect":
		var b struct {
			Timeout   *int64 `json:"timeout"`
			Memory    *bool  `json:"memory"`
			AutoPause *bool  `json:"autoPause"`
		}
		if !decodeBody(w, r, &b) {
			return
		}
		if b.Memory != nil && !*b.Memory {
			fail(w, http.StatusBadRequest, "memory: false (resume by rebooting) is not supported: a paused airlock sandbox resumes with its processes and memory")
			return
		}
		if b.AutoPause != nil && *b.AutoPause {
			fail(w, http.StatusBadRequest, "autoPause: true is not supported: a sandbox is killed at its timeout")
			return
		}
		paused := s.box.State() == "paused"
		if action == "resume" && !paused {
			fail(w, http.StatusConflict, "sandbox %q is not paused", s.id)
			return
		}
		if b.Timeout != nil {
			d, ok := h.lifetime(w, *b.Timeout)
			if !ok {
				return
			}
			if err := s.box.SetTimeout(d); err != nil {
				failErr(w, "timeout", err)
				return
			}
		}
		status := http.StatusOK
		if paused {
			if err := s.box.Resume(); err != nil {
				failErr(w, "resume", err)
				return
			}
			h.log.Info("e2b sandbox resumed", "id", s.id, "tenant", s.tenant)
			status = http.StatusCreated
		}
		writeJSON(w, status, h.created(s))
	}
}

// decodeBody decodes a JSON body strictly (an empty one is {}); false:
// answered.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		fail(w, http.StatusBadRequest, "the request body: %v (fields this server does not know are refused, not ignored)", err)
		return false
	}
	return true
}

// lifetime validates a timeout in seconds; false: answered.
func (h *Handler) lifetime(w http.ResponseWriter, sec int64) (time.Duration, bool) {
	d := time.Duration(sec) * time.Second
	if sec < 0 || d > h.cfg.MaxTimeout {
		fail(w, http.StatusBadRequest, "timeout %d s: want 0 to %d seconds", sec, int64(h.cfg.MaxTimeout/time.Second))
		return 0, false
	}
	return d, true
}

// newSandboxBody is POST /sandboxes and /v2/sandboxes's body; every
// field E2B's API defines is decoded, and what airlock cannot do is
// refused, not ignored.
type newSandboxBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
	Mcp          json.RawMessage `json:"mcp"`
	Network      json.RawMessage `json:"network"`
	Iam          json.RawMessage `json:"iam"`
	VolumeMounts json.RawMessage `json:"volumeMounts"`
}

// refusal names the first field of b airlock cannot honour, or "".
func (b *newSandboxBody) refusal() string {
	set := func(m json.RawMessage) bool {
		s := strings.TrimSpace(string(m))
		return s != "" && s != "null" && s != "{}" && s != "[]"
	}
	switch {
	case b.Secure != nil && !*b.Secure:
		return "secure: false is not supported: every airlock sandbox's data plane needs its access token"
	case b.AllowInternetAccess != nil && *b.AllowInternetAccess:
		return "allow_internet_access: true is not supported: a template's sandboxes have no network (airlock's policy denies it)"
	case b.AutoPause != nil && *b.AutoPause:
		return "autoPause: true is not supported: a sandbox is killed at its timeout (pause it explicitly)"
	case b.AutoPauseMemory != nil:
		return "autoPauseMemory is not supported (no pause on timeout)"
	case b.AutoResume != nil && b.AutoResume.Enabled:
		return "autoResume is not supported: resume a paused sandbox with connect"
	case set(b.Mcp):
		return "mcp is not supported: airlock has no MCP gateway template"
	case set(b.Network):
		return "network is not supported: a template's sandboxes have no network, and their ports are reached only with the sandbox's traffic token"
	case set(b.Iam):
		return "iam is not supported"
	case set(b.VolumeMounts):
		return "volumeMounts is not supported: a sandbox's files are its own workspace"
	}
	return ""
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, tenant string) {
	var b newSandboxBody
	if !decodeBody(w, r, &b) {
		return
	}
	if b.TemplateID == "" {
		fail(w, http.StatusBadRequest, "templateID: required (served: %s)", strings.Join(Templates, ", "))
		return
	}
	known := false
	for _, t := range Templates {
		known = known || t == b.TemplateID
	}
	if !known {
		fail(w, http.StatusBadRequest, "template %q is not served by airlock (served: %s)", b.TemplateID, strings.Join(Templates, ", "))
		return
	}
	if msg := b.refusal(); msg != "" {
		fail(w, http.StatusBadRequest, "%s", msg)
		return
	}
	sec := int64(15) // E2B's default
	if b.Timeout != nil {
		sec = *b.Timeout
	}
	lifetime, ok := h.lifetime(w, sec)
	if !ok {
		return
	}
	if lifetime == 0 {
		lifetime = time.Second // "0 s" is at once; the executor's 0 would be an hour
	}
	if !h.reserve(w, tenant) {
		return
	}
	// A create that tightens nothing (both templates are the served
	// policy) takes one of the executor's prepared live sandboxes
	// (executor.PoolConfig.Live: serve --sandbox-pool).
	box, err := h.cfg.Backend.NewSandbox(r.Context(), SandboxConfig{Policy: h.cfg.Policy, Timeout: lifetime})
	if err != nil {
		h.release(tenant)
		failErr(w, "create", err)
		return
	}
	s := &sandbox{id: box.ID(), tenant: tenant, template: b.TemplateID, box: box, envdToken: newToken(), trafficToken: newToken(),
		started: time.Now().UTC(), metadata: b.Metadata, env: b.EnvVars, domain: domainOf(r)}
	if s.metadata == nil {
		s.metadata = map[string]string{}
	}
	s.cpus, s.memoryMB = limitsOf(h.cfg.Policy)
	s.ci = newInterpreter(s)
	h.mu.Lock()
	h.pending--
	h.tpending[tenant]--
	h.boxes[s.id] = s
	closed := h.closed
	h.mu.Unlock()
	if closed {
		h.kill(s)
		fail(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	}
	go func() {
		<-box.Done()
		h.forget(s)
	}()
	h.log.Info("e2b sandbox created", "id", s.id, "tenant", tenant, "template", s.template, "timeout", lifetime)
	writeJSON(w, http.StatusCreated, h.created(s))
}

// exec starts a process in s with s's environment under its own.
func (s *sandbox) exec(ctx context.Context, req ProcRequest) (Proc, error) {
	if len(s.env) > 0 {
		env := make(map[string]string, len(s.env)+len(req.Env))
		for k, v := range s.env {
			env[k] = v
		}
		for k, v := range req.Env {
			env[k] = v
		}
		req.Env = env
	}
	return s.box.Exec(ctx, req)
}

// reserve takes a place for a new sandbox of tenant; false: answered.
func (h *Handler) reserve(w http.ResponseWriter, tenant string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		fail(w, http.StatusServiceUnavailable, "the server is shutting down")
		return false
	}
	mine := h.tpending[tenant]
	for _, s := range h.boxes {
		if s.tenant == tenant {
			mine++
		}
	}
	switch {
	case len(h.boxes)+h.pending >= h.cfg.MaxSandboxes:
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusTooManyRequests, "the server holds %d sandboxes, its most: kill one first", h.cfg.MaxSandboxes)
		return false
	case mine >= h.cfg.TenantMaxSandboxes:
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusTooManyRequests, "this API key holds %d sandboxes, its most: kill one first", h.cfg.TenantMaxSandboxes)
		return false
	}
	h.pending++
	h.tpending[tenant]++
	return true
}

func (h *Handler) release(tenant string) {
	h.mu.Lock()
	h.pending--
	h.tpending[tenant]--
	h.mu.Unlock()
}

// kill closes s and forgets it.
func (h *Handler) kill(s *sandbox) {
	s.ci.closeAll()
	s.box.Close()
	h.forget(s)
}

func (h *Handler) forget(s *sandbox) {
	h.mu.Lock()
	_, was := h.boxes[s.id]
	delete(h.boxes, s.id)
	h.mu.Unlock()
	if was {
		s.ci.closeAll()
		h.log.Info("e2b sandbox ended", "id", s.id, "tenant", s.tenant, "reason", fmt.Sprint(s.box.Err()))
	}
}

// domainOf is the domain getHost names: the request's host name when
// it is a name, "localhost" for an address.
func domainOf(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" || net.ParseIP(strings.Trim(host, "[]")) != nil {
		return "localhost"
	}
	return host
}

func limitsOf(p policy.Policy) (cpus int, memMB int64) {
	cpus = 1
	if p.CPUs > 0 {
		cpus = int(p.CPUs + 0.999)
	}
	return cpus, p.MemoryLimit() >> 20
}

// sandboxCreated is the API's Sandbox object.
type sandboxCreated struct {
	TemplateID         string `json:"templateID"`
	SandboxID          string `json:"sandboxID"`
	ClientID           string `json:"clientID"`
	EnvdVersion        string `json:"envdVersion"`
	EnvdAccessToken    string `json:"envdAccessToken"`
	TrafficAccessToken string `json:"trafficAccessToken"`
	Domain             string `json:"domain"`
}

func (h *Handler) created(s *sandbox) sandboxCreated {
	return sandboxCreated{TemplateID: s.template, SandboxID: s.id, ClientID: "airlock", EnvdVersion: envdVersion,
		EnvdAccessToken: s.envdToken, TrafficAccessToken: s.trafficToken, Domain: s.domain}
}

// sandboxListed is the API's ListedSandbox (and, with the token and
// domain, SandboxDetail).
type sandboxListed struct {
	TemplateID      string            `json:"templateID"`
	SandboxID       string            `json:"sandboxID"`
	ClientID        string            `json:"clientID"`
	StartedAt       time.Time         `json:"startedAt"`
	EndAt           time.Time         `json:"endAt"`
	State           string            `json:"state"`
	CPUCount        int               `json:"cpuCount"`
	MemoryMB        int64             `json:"memoryMB"`
	DiskSizeMB      int64             `json:"diskSizeMB"`
	EnvdVersion     string            `json:"envdVersion"`
	Metadata        map[string]string `json:"metadata"`
	EnvdAccessToken string            `json:"envdAccessToken,omitempty"`
	Domain          string            `json:"domain,omitempty"`
}

func (h *Handler) listed(s *sandbox) sandboxListed {
	st := s.box.State()
	if st != "paused" {
		st = "running"
	}
	return sandboxListed{TemplateID: s.template, SandboxID: s.id, ClientID: "airlock", StartedAt: s.started, EndAt: s.box.ExpiresAt().UTC(),
		State: st, CPUCount: s.cpus, MemoryMB: s.memoryMB, EnvdVersion: envdVersion, Metadata: s.metadata}
}

func (h *Handler) detail(s *sandbox) sandboxListed {
	d := h.listed(s)
	d.EnvdAccessToken, d.Domain = s.envdToken, s.domain
	return d
}

// list answers GET /v2/sandboxes (and /sandboxes): the tenant's
// sandboxes, filtered by metadata (k=v&k2=v2, URL-encoded, all must
// match) and state (running, paused; comma-separated or repeated), in
// startedAt order (asc, or desc: the default), limit a page (default
// 100, at most 1000) and the cursor of the next in x-next-token.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, tenant string, v2 bool) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "metadata", "state":
		case "limit", "nextToken", "order":
			if !v2 {
				fail(w, http.StatusBadRequest, "query %q: GET /sandboxes lists all at once; pages are GET /v2/sandboxes's", k)
				return
			}
		default:
			fail(w, http.StatusBadRequest, "query %q is not supported (metadata, state, limit, nextToken, order are)", k)
			return
		}
	}
	want, err := parseMetadataQuery(q.Get("metadata"))
	if err != nil {
		fail(w, http.StatusBadRequest, "metadata: %v", err)
		return
	}
	states := map[string]bool{}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if st != "running" && st != "paused" {
				fail(w, http.StatusBadRequest, "state %q: want running or paused", st)
				return
			}
			states[st] = true
		}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			fail(w, http.StatusBadRequest, "limit %q: want 1 to 1000", v)
			return
		}
	}
	desc := true
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		desc = false
	default:
		fail(w, http.StatusBadRequest, "order %q: want asc or desc", q.Get("order"))
		return
	}
	h.mu.Lock()
	var mine []sandboxListed
	for _, s := range h.boxes {
		if s.tenant == tenant {
			mine = append(mine, h.listed(s))
		}
	}
	h.mu.Unlock()
	var out []sandboxListed
	for _, l := range mine {
		if len(states) > 0 && !states[l.State] {
			continue
		}
		match := true
		for k, v := range want {
			match = match && l.Metadata[k] == v
		}
		if match {
			out = append(out, l)
		}
	}
	key := func(l sandboxListed) string { return fmt.Sprintf("%020d.%s", l.StartedAt.UnixNano(), l.SandboxID) }
	sort.Slice(out, func(i, j int) bool {
		if desc {
			return key(out[i]) > key(out[j])
		}
		return key(out[i]) < key(out[j])
	})
	if !v2 {
		writeJSON(w, http.StatusOK, orEmpty(out))
		return
	}
	if tok := q.Get("nextToken"); tok != "" {
		i := sort.Search(len(out), func(i int) bool {
			if desc {
				return key(out[i]) < tok
			}
			return key(out[i]) > tok
		})
		out = out[i:]
	}
	if len(out) > limit {
		w.Header().Set("X-Next-Token", key(out[limit-1]))
		out = out[:limit]
	}
	writeJSON(w, http.StatusOK, orEmpty(out))
}

func orEmpty(l []sandboxListed) []sandboxListed {
	if l == nil {
		return []sandboxListed{}
	}
	return l
}

// parseMetadataQuery decodes the SDK's metadata filter: a query string
// of URL-encoded key=value pairs.
func parseMetadataQuery(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, "&") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want key=value pairs joined by &", kv)
		}
		var err error
		if k, err = unescape(k); err != nil {
			return nil, err
		}
		if v, err = unescape(v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// withTimeout is ctx bounded by d (d <= 0: ctx's own end).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
