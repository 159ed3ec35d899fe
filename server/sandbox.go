package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// Live sandboxes over HTTP (DESIGN "Live sandboxes"; docs/sandboxes.md):
// the routes map onto executor.Sandbox and add only what a server owns:
// which tenant a sandbox belongs to, the per-tenant and per-server
// limits, and the drain. A sandbox outlives the request that made it and
// its client's connection: it ends when deleted, at its idle timeout or
// lifetime, or when the server drains.

// Defaults of the sandbox limits (Config).
const (
	defaultMaxSandboxes        = 64
	defaultSandboxMaxProcesses = 64
	defaultMaxSandboxBuffer    = 4 << 30
	defaultSandboxIdle         = 5 * time.Minute
	defaultSandboxLifetime     = time.Hour
	defaultSandboxMaxLifetime  = 24 * time.Hour
)

// liveSandbox is an open sandbox and what the server keeps of it.
type liveSandbox struct {
	sb     *executor.Sandbox
	tenant string
	pol    policy.Policy // resolved: what its processes run under
	// bufEach bounds what one process of it keeps buffered: both
	// streams, each at most the policy's max_output (the library's ring).
	bufEach int64
	// start serialises the check of its process limit with the start it
	// admits (Exec returns once the process runs: a few milliseconds).
	start sync.Mutex
}

// buffered bounds what its processes hold buffered now: the library
// keeps each process's streams, running or ended, until they are read
// or pushed out by newer ones (executor.Sandbox.Processes lists them).
func (ls *liveSandbox) buffered() int64 { return int64(len(ls.sb.Processes())) * ls.bufEach }

// sandboxes is the server's registry of open sandboxes.
type sandboxes struct {
	mu   sync.Mutex
	byID map[string]*liveSandbox
	// creating counts creations under way, by tenant and in all, so
	// that two at once cannot both pass a limit with one place left.
	creating map[string]int
}

// SandboxView is a sandbox as the routes describe it: the library's
// SandboxInfo, its tenant and its policy.
type SandboxView struct {
	executor.SandboxInfo
	// Tenant is the credential that made it, the only one that sees it.
	Tenant string        `json:"tenant"`
	Policy policy.Policy `json:"policy"`
}

func (ls *liveSandbox) view() SandboxView {
	return SandboxView{SandboxInfo: ls.sb.Info(), Tenant: ls.tenant, Policy: ls.pol}
}

// SandboxRequest is the body of POST /v1/sandboxes (it may be empty).
type SandboxRequest struct {
	// Policy tightens the served policy, as a run's (Overrides).
	Policy *Overrides `json:"policy,omitempty"`
	// Env is added to every process's environment, as a run's env.
	Env map[string]string `json:"env,omitempty"`
	// Files are written into /workspace before the sandbox is returned.
	Files []FileIn `json:"files,omitempty"`
	// IdleTimeout closes it after that long without a call on it
	// (default 5 minutes; at most the server's --session-idle).
	IdleTimeout *policy.Duration `json:"idle_timeout,omitempty"`
	// Timeout is its lifetime from now (default 1 hour; at most the
	// server's --sandbox-max-lifetime). POST .../timeout moves it.
	Timeout *policy.Duration `json:"timeout,omitempty"`
	// Metadata is opaque to airlock and returned in its description.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// TimeoutRequest is the body of PATCH|POST /v1/sandboxes/{id}/timeout.
type TimeoutRequest struct {
	Timeout policy.Duration `json:"timeout"`
}

// limitFull refuses a sandbox, a process or a buffer past a limit: 429,
// retryable (closing a sandbox or reading output frees the place).
type limitFull struct{ msg string }

func (e *limitFull) Error() string          { return "server: " + e.msg }
func (e *limitFull) Is(target error) bool   { return target == policy.ErrUnavailable }
func full(format string, args ...any) error { return &limitFull{fmt.Sprintf(format, args...)} }

// sandboxLimits fills in the sandbox limits' defaults (New).
func (cfg *Config) sandboxLimits() {
	if cfg.MaxSandboxes <= 0 {
		cfg.MaxSandboxes = defaultMaxSandboxes
	}
	if cfg.TenantMaxSandboxes <= 0 || cfg.TenantMaxSandboxes > cfg.MaxSandboxes {
		cfg.TenantMaxSandboxes = cfg.MaxSandboxes
	}
	if cfg.SandboxMaxProcesses <= 0 {
		cfg.SandboxMaxProcesses = defaultSandboxMaxProcesses
	}
	if cfg.MaxSandboxBuffer <= 0 {
		cfg.MaxSandboxBuffer = defaultMaxSandboxBuffer
	}
	if cfg.TenantMaxSandboxBuffer <= 0 || cfg.TenantMaxSandboxBuffer > cfg.MaxSandboxBuffer {
		cfg.TenantMaxSandboxBuffer = cfg.MaxSandboxBuffer
	}
	if cfg.SandboxMaxLifetime <= 0 {
		cfg.SandboxMaxLifetime = defaultSandboxMaxLifetime
	}
}

// SandboxLimits are the sandbox limits /v1/capabilities shows.
type SandboxLimits struct {
	MaxSandboxes       int             `json:"max_sandboxes"`
	TenantMaxSandboxes int             `json:"tenant_max_sandboxes"`
	MaxProcesses       int             `json:"max_processes"`
	MaxBuffer          int64           `json:"max_buffer"`
	TenantMaxBuffer    int64           `json:"tenant_max_buffer"`
	MaxIdleTimeout     policy.Duration `json:"max_idle_timeout"`
	MaxLifetime        policy.Duration `json:"max_lifetime"`
	Routes             []string        `json:"routes"`
}

func (s *Server) sandboxLimitsInfo() SandboxLimits {
	return SandboxLimits{MaxSandboxes: s.cfg.MaxSandboxes, TenantMaxSandboxes: s.cfg.TenantMaxSandboxes,
		MaxProcesses: s.cfg.SandboxMaxProcesses, MaxBuffer: s.cfg.MaxSandboxBuffer, TenantMaxBuffer: s.cfg.TenantMaxSandboxBuffer,
		MaxIdleTimeout: policy.Duration(s.cfg.SessionIdle), MaxLifetime: policy.Duration(s.cfg.SandboxMaxLifetime),
		Routes: []string{"processes", "output", "stdin", "signal", "resize", "pty:websocket", "files", "ports:http", "ports:tcp"}}
}

// sandboxConfig resolves a create body under the served policy.
func (s *Server) sandboxConfig(b *SandboxRequest) (executor.SandboxConfig, error) {
	var cfg executor.SandboxConfig
	p, err := s.requestPolicy(b.Policy, b.Env)
	if err != nil {
		return cfg, err
	}
	cfg.Policy, cfg.Metadata, cfg.MaxProcesses = p, b.Metadata, s.cfg.SandboxMaxProcesses
	cfg.IdleTimeout = min(defaultSandboxIdle, s.cfg.SessionIdle)
	if b.IdleTimeout != nil {
		switch d := time.Duration(*b.IdleTimeout); {
		case d <= 0:
			return cfg, policy.Invalid("idle_timeout", "must be positive")
		case d > s.cfg.SessionIdle:
			return cfg, policy.Invalid("idle_timeout", "%v is above the server's maximum %v (--session-idle)", d, s.cfg.SessionIdle)
		default:
			cfg.IdleTimeout = d
		}
	}
	cfg.Timeout = min(defaultSandboxLifetime, s.cfg.SandboxMaxLifetime)
	if b.Timeout != nil {
		d, err := s.lifetime("timeout", time.Duration(*b.Timeout))
		if err != nil {
			return cfg, err
		}
		cfg.Timeout = d
	}
	for k, v := range b.Metadata {
		if len(k) > 256 || len(v) > 4096 {
			return cfg, policy.Invalid("metadata", "a key is at most 256 bytes and a value 4096")
		}
	}
	if len(b.Metadata) > 64 {
		return cfg, policy.Invalid("metadata", "%d entries; at most 64", len(b.Metadata))
	}
	if len(b.Files) > 0 {
		// The very checks of an exec's files.
		files, err := filesIn(b.Files)
		if err != nil {
			return cfg, err
		}
		cfg.Files = files
	}
	return cfg, nil
}

// filesIn decodes a create body's files, with an exec's checks.
func filesIn(in []FileIn) (map[string][]byte, error) {
	files := map[string][]byte{}
	for i, f := range in {
		field := fmt.Sprintf("files[%d]", i)
		if n := f.Name; n == "" || path.IsAbs(n) || path.Clean(n) != n || n == "." || n == ".." || strings.HasPrefix(n, "../") || strings.ContainsRune(n, 0) {
			return nil, policy.Invalid("file name", "%s.name %q must be a clean path relative to /workspace", field, n)
		}
		if _, dup := files[f.Name]; dup {
			return nil, policy.Invalid(field+".name", "%q given twice", f.Name)
		}
		data, err := decodeContent(field+".content", f.Content, f.Encoding)
		if err != nil {
			return nil, err
		}
		files[f.Name] = data
	}
	return files, nil
}

// lifetime checks a sandbox lifetime against the server's maximum.
func (s *Server) lifetime(field string, d time.Duration) (time.Duration, error) {
	switch {
	case d <= 0:
		return 0, policy.Invalid(field, "must be positive")
	case d > s.cfg.SandboxMaxLifetime:
		return 0, policy.Invalid(field, "%v is above the server's maximum %v (--sandbox-max-lifetime)", d, s.cfg.SandboxMaxLifetime)
	}
	return d, nil
}

func (s *Server) handleSandboxCreate(w http.ResponseWriter, r *http.Request) {
	var b SandboxRequest
	body, err := s.readBody(w, r)
	if err != nil {
		s.failDecode(w, err)
		return
	}
	if len(body) > 0 {
		if err := decodeJSON(body, &b); err != nil {
			s.failDecode(w, err)
			return
		}
	}
	cfg, err := s.sandboxConfig(&b)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	ls, status, err := s.createSandbox(r.Context(), cfg)
	if err != nil {
		s.fail(w, status, err, nil)
		return
	}
	w.Header().Set("Location", "/v1/sandboxes/"+ls.sb.ID())
	writeJSON(w, http.StatusCreated, ls.view())
}

// createSandbox makes a sandbox for the request's tenant, within the
// limits; status is a refusal's HTTP status (0: its class's).
func (s *Server) createSandbox(ctx context.Context, cfg executor.SandboxConfig) (*liveSandbox, int, error) {
	tenant := ctxTenant(ctx)
	reg := &s.live
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		return nil, http.StatusServiceUnavailable, errDraining
	}
	reg.mu.Lock()
	n, mine := reg.creating[""], reg.creating[tenant]
	for _, ls := range reg.byID {
		n++
		if ls.tenant == tenant {
			mine++
		}
	}
	switch {
	case n >= s.cfg.MaxSandboxes:
		reg.mu.Unlock()
		s.m.rejections.WithLabelValues("sandboxes").Inc()
		return nil, http.StatusTooManyRequests, full("%d sandboxes open, the server's --max-sandboxes; close one or retry later", n)
	case mine >= s.cfg.TenantMaxSandboxes:
		reg.mu.Unlock()
		s.m.rejections.WithLabelValues("tenant_sandboxes").Inc()
		return nil, http.StatusTooManyRequests, full("%d sandboxes open for this credential, the server's --tenant-max-sandboxes; close one or retry later", mine)
	}
	if reg.creating == nil {
		reg.creating = map[string]int{}
	}
	reg.creating[""]++
	reg.creating[tenant]++
	reg.mu.Unlock()
	uncount := func() {
		if reg.creating[""]--; reg.creating[""] == 0 {
			delete(reg.creating, "")
		}
		if reg.creating[tenant]--; reg.creating[tenant] == 0 {
			delete(reg.creating, tenant)
		}
	}
	// The request's context bounds the making only: once made, the
	// sandbox lives on its own (its idle timeout, lifetime, a delete).
	sb, err := s.ex.NewSandbox(ctx, cfg)
	if err != nil {
		reg.mu.Lock()
		uncount()
		reg.mu.Unlock()
		return nil, 0, s.killedByDrain(err)
	}
	ls := &liveSandbox{sb: sb, tenant: tenant, pol: cfg.Policy, bufEach: 2 * int64(cfg.Policy.MaxOutput)}
	reg.mu.Lock()
	uncount()
	if reg.byID == nil {
		reg.byID = map[string]*liveSandbox{}
	}
	reg.byID[sb.ID()] = ls
	reg.mu.Unlock()
	// A drain that began meanwhile closed what it saw; close this one.
	if s.Draining() {
		s.closeSandbox(ls)
		return nil, http.StatusServiceUnavailable, errDraining
	}
	go func() {
		<-sb.Done()
		reg.mu.Lock()
		if reg.byID[sb.ID()] == ls {
			delete(reg.byID, sb.ID())
		}
		reg.mu.Unlock()
	}()
	s.log.Info("sandbox created", "sandbox", sb.ID(), "tenant", tenant)
	return ls, 0, nil
}

// OpenSandbox makes a live sandbox for ctx's tenant, as POST
// /v1/sandboxes does (the served policy's defaults and ceilings, the
// sandbox limits, the drain): for other front ends of the same server
// (MCP, the E2B API), so that their sandboxes are the routes' too.
func (s *Server) OpenSandbox(ctx context.Context, b *SandboxRequest) (*executor.Sandbox, error) {
	cfg, err := s.sandboxConfig(b)
	if err != nil {
		return nil, err
	}
	ls, _, err := s.createSandbox(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return ls.sb, nil
}

// SandboxByID returns ctx's tenant's open sandbox id, or the error the
// routes answer 404 with (another tenant's is as unknown).
func (s *Server) SandboxByID(ctx context.Context, id string) (*executor.Sandbox, error) {
	ls, err := s.sandboxOf(ctxTenant(ctx), id)
	if err != nil {
		return nil, err
	}
	return ls.sb, nil
}

// errNoSandbox is the answer for an id that is not an open sandbox of
// the request's tenant: the same for another tenant's.
func errNoSandbox(id string) error {
	return policy.Invalid("id", "no open sandbox %q (it was closed, timed out or idled out, or never made)", id)
}

// sandboxOf returns the tenant's open sandbox id, or errNoSandbox.
func (s *Server) sandboxOf(tenant, id string) (*liveSandbox, error) {
	s.live.mu.Lock()
	ls := s.live.byID[id]
	s.live.mu.Unlock()
	if ls == nil || ls.tenant != tenant {
		return nil, errNoSandbox(id)
	}
	select {
	case <-ls.sb.Done():
		return nil, errNoSandbox(id)
	default:
	}
	return ls, nil
}

// lookupSandbox returns the request's {id} sandbox, or answers 404.
func (s *Server) lookupSandbox(w http.ResponseWriter, r *http.Request) *liveSandbox {
	ls, err := s.sandboxOf(ctxTenant(r.Context()), r.PathValue("id"))
	if err != nil {
		s.fail(w, http.StatusNotFound, err, nil)
	}
	return ls
}

func (s *Server) handleSandboxList(w http.ResponseWriter, r *http.Request) {
	tenant := ctxTenant(r.Context())
	s.live.mu.Lock()
	var mine []*liveSandbox
	for _, ls := range s.live.byID {
		if ls.tenant == tenant {
			mine = append(mine, ls)
		}
	}
	s.live.mu.Unlock()
	out := []SandboxView{}
	for _, ls := range mine {
		if v := ls.view(); v.State != "closed" {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b SandboxView) int { return a.CreatedAt.Compare(b.CreatedAt) })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSandboxGet(w http.ResponseWriter, r *http.Request) {
	if ls := s.lookupSandbox(w, r); ls != nil {
		ls.sb.Touch()
		writeJSON(w, http.StatusOK, ls.view())
	}
}

func (s *Server) handleSandboxDelete(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	if err := s.closeSandbox(ls); err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleSandboxTimeout(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	var b TimeoutRequest
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	d, err := s.lifetime("timeout", time.Duration(b.Timeout))
	if err == nil {
		err = ls.sb.SetTimeout(d)
	}
	if err != nil {
		s.fail(w, s.closedStatus(err), err, nil)
		return
	}
	writeJSON(w, http.StatusOK, ls.view())
}

// closedStatus is 404 for an error that says the sandbox ended (it did
// between the lookup and the call), else 0 (the class's status).
func (s *Server) closedStatus(err error) int {
	if errors.Is(err, executor.ErrSandboxClosed) || errors.Is(err, executor.ErrSandboxTimeout) || errors.Is(err, executor.ErrSandboxIdle) {
		return http.StatusNotFound
	}
	return 0
}

// processFull is the refusal of a process past --sandbox-max-processes
// (executor.ErrSandboxFull), counted; nil for any other error.
func (s *Server) processFull(err error) error {
	if !errors.Is(err, executor.ErrSandboxFull) {
		return nil
	}
	s.m.rejections.WithLabelValues("sandbox_processes").Inc()
	return full("%d processes running in this sandbox, the server's --sandbox-max-processes; wait for one to end or kill one", s.cfg.SandboxMaxProcesses)
}

// closeSandbox closes ls and forgets it.
func (s *Server) closeSandbox(ls *liveSandbox) error {
	s.live.mu.Lock()
	if s.live.byID[ls.sb.ID()] == ls {
		delete(s.live.byID, ls.sb.ID())
	}
	s.live.mu.Unlock()
	err := ls.sb.Close()
	s.log.Info("sandbox closed", "sandbox", ls.sb.ID(), "tenant", ls.tenant)
	return err
}

// closeSandboxes closes every sandbox (Drain): their processes are
// killed, their cgroups and workspaces removed.
func (s *Server) closeSandboxes() {
	s.live.mu.Lock()
	open := s.live.byID
	s.live.byID = nil
	s.live.mu.Unlock()
	var wg sync.WaitGroup
	for _, ls := range open {
		wg.Go(func() {
			if err := ls.sb.Close(); err != nil {
				s.log.Warn("closing a sandbox", "sandbox", ls.sb.ID(), "error", err)
			}
		})
	}
	wg.Wait()
}

// SandboxCount is the number of open sandboxes.
func (s *Server) SandboxCount() int {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	return len(s.live.byID)
}

// admitProcess checks a new process of ls against the bytes buffered by
// its tenant's sandboxes and by all. Called with ls.start held. (Its
// sandbox's running processes are bounded by the library, which holds a
// place from its check to the process's end: SandboxConfig.MaxProcesses,
// refused as processFull.)
func (s *Server) admitProcess(ls *liveSandbox) error {
	s.live.mu.Lock()
	all := make([]*liveSandbox, 0, len(s.live.byID))
	for _, o := range s.live.byID {
		all = append(all, o)
	}
	s.live.mu.Unlock()
	var total, mine int64
	for _, o := range all {
		b := o.buffered()
		total += b
		if o.tenant == ls.tenant {
			mine += b
		}
	}
	switch {
	case mine+ls.bufEach > s.cfg.TenantMaxSandboxBuffer:
		s.m.rejections.WithLabelValues("tenant_buffer").Inc()
		return full("this credential's sandboxes may buffer %d bytes of output already (each process's two streams, up to max_output each, kept until read), past the server's --tenant-max-sandbox-buffer of %d; read or wait for processes' output, or close a sandbox", mine, s.cfg.TenantMaxSandboxBuffer)
	case total+ls.bufEach > s.cfg.MaxSandboxBuffer:
		s.m.rejections.WithLabelValues("buffer").Inc()
		return full("the server's sandboxes may buffer %d bytes of output already, past --max-sandbox-buffer %d; retry later", total, s.cfg.MaxSandboxBuffer)
	}
	return nil
}
