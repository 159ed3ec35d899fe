package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// The Server's API without HTTP, for other front ends of the same
// executor (airlock mcp): each call goes through the same policy
// tightening, run slots and queue, sessions and drain as the HTTP
// routes. Errors are the library's classes (policy.Describe); a
// program's own outcome is a Result.

// Exec runs one piece of code in a fresh sandbox, as POST /v1/exec.
func (s *Server) Exec(ctx context.Context, b *ExecRequest) (*executor.Result, error) {
	req, err := s.execToRequest(b, false)
	if err != nil {
		return nil, err
	}
	return s.execute(ctx, "exec", req)
}

// Run runs one program in a fresh sandbox, as POST /v1/run.
func (s *Server) Run(ctx context.Context, b *RunRequest) (*executor.Result, error) {
	req, err := s.runToRequest(b, false)
	if err != nil {
		return nil, err
	}
	return s.execute(ctx, "run", req)
}

// SessionExec runs code in the open session id, as its /exec route; a
// timeout above 0 is the run's (at most the session's, as checked by the
// caller), 0 the session's.
func (s *Server) SessionExec(ctx context.Context, id string, b *ExecRequest, timeout time.Duration) (*SessionResult, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, err
	}
	req, err := s.execToRequest(b, true)
	if err != nil {
		return nil, err
	}
	return s.sessionExecute(ctx, se, req, timeout)
}

// SessionRun runs a program in the open session id, as its /run route
// (timeout as for SessionExec).
func (s *Server) SessionRun(ctx context.Context, id string, b *RunRequest, timeout time.Duration) (*SessionResult, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, err
	}
	req, err := s.runToRequest(b, true)
	if err != nil {
		return nil, err
	}
	return s.sessionExecute(ctx, se, req, timeout)
}

// sessionExecute runs req in se under a run slot.
func (s *Server) sessionExecute(ctx context.Context, se *session, req executor.Request, timeout time.Duration) (*SessionResult, error) {
	release, _, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.kill, cancel)
	defer stop()
	return s.runSession(ctx, se, req, timeout)
}

// SessionSandbox returns the live sandbox of LocalTenant's open session
// id: what a front end (airlock mcp) starts background processes in,
// reads their output from and dials ports of. Closing it closes the
// session.
func (s *Server) SessionSandbox(id string) (*executor.Sandbox, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, err
	}
	return se.sb, nil
}

// execute runs req under a run slot.
func (s *Server) execute(ctx context.Context, kind string, req executor.Request) (*executor.Result, error) {
	release, _, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.kill, cancel)
	defer stop()
	return s.runObserved(ctx, kind, req)
}

// OpenSession opens a session, as POST /v1/sessions, for LocalTenant.
func (s *Server) OpenSession(b *SessionRequest) (SessionInfo, error) {
	return s.openSession(context.Background(), b)
}

// openSession opens a session for ctx's tenant.
func (s *Server) openSession(ctx context.Context, b *SessionRequest) (SessionInfo, error) {
	if b == nil {
		b = &SessionRequest{}
	}
	p, err := s.requestPolicy(b.Policy, b.Env)
	if err != nil {
		return SessionInfo{}, err
	}
	idle := s.cfg.SessionIdle
	if b.IdleTimeout != nil {
		switch t := time.Duration(*b.IdleTimeout); {
		case t <= 0:
			return SessionInfo{}, policy.Invalid("idle_timeout", "must be positive")
		case t > idle:
			return SessionInfo{}, policy.Invalid("idle_timeout", "%v is above the server's maximum %v", t, idle)
		default:
			idle = t
		}
	}
	if s.Draining() {
		return SessionInfo{}, errDraining
	}
	tenant := ctxTenant(ctx)
	s.smu.Lock()
	defer s.smu.Unlock()
	s.prune()
	if len(s.sessions) >= s.cfg.MaxSessions {
		s.m.rejections.WithLabelValues("sessions").Inc()
		return SessionInfo{}, errSessionsFull(s.cfg.MaxSessions)
	}
	mine := 0
	for _, se := range s.sessions {
		if se.info.Tenant == tenant {
			mine++
		}
	}
	if mine >= s.cfg.TenantMaxSessions {
		s.m.rejections.WithLabelValues("tenant_sessions").Inc()
		return SessionInfo{}, tenantSessionsFull(s.cfg.TenantMaxSessions)
	}
	sb, err := s.ex.NewSandbox(ctx, executor.SandboxConfig{Policy: p, IdleTimeout: idle, Timeout: SessionLifetime, MaxProcesses: s.cfg.SandboxMaxProcesses})
	if err != nil {
		return SessionInfo{}, err
	}
	var id [16]byte
	rand.Read(id[:])
	se := &session{sb: sb, info: SessionInfo{ID: hex.EncodeToString(id[:]), Tenant: tenant,
		Created: time.Now().UTC(), IdleTimeout: policy.Duration(idle), Policy: p}}
	s.sessions[se.info.ID] = se
	s.log.Info("session opened", "session", se.info.ID, "tenant", tenant)
	return se.infoNow(), nil
}

// session returns LocalTenant's open session id, or ErrInvalid.
func (s *Server) session(id string) (*session, error) { return s.sessionOf(LocalTenant, id) }

// sessionOf returns tenant's open session id, or ErrInvalid: the same
// error, word for word, whether id was never made, has closed, or is
// another tenant's (so that ids cannot be probed).
func (s *Server) sessionOf(tenant, id string) (*session, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	se := s.sessions[id]
	if se != nil && se.closed() {
		delete(s.sessions, id)
		se = nil
	}
	if se == nil || se.info.Tenant != tenant {
		return nil, policy.Invalid("session", "no open session %q (closed, timed out idle, or never made)", id)
	}
	return se, nil
}

// CloseSession closes LocalTenant's open session id: every process in
// it is killed and its workspace removed.
func (s *Server) CloseSession(id string) error {
	se, err := s.session(id)
	if err != nil {
		return err
	}
	return s.closeSession(se)
}

// closeSession forgets se, closes it (its processes killed) and removes
// its workspace.
func (s *Server) closeSession(se *session) error {
	s.smu.Lock()
	delete(s.sessions, se.info.ID)
	s.smu.Unlock()
	s.log.Info("session closed", "session", se.info.ID, "tenant", se.info.Tenant)
	if err := se.sb.Close(); err != nil {
		return &policy.SetupError{Stage: "workspace", Err: err}
	}
	return nil
}

// SessionOpen reports whether id is an open session.
func (s *Server) SessionOpen(id string) bool {
	_, err := s.session(id)
	return err == nil
}

// ReadSessionFile returns up to max bytes of a regular file of the
// session's workspace, and its size. A missing file is ErrInvalid naming
// it (and fs.ErrNotExist).
func (s *Server) ReadSessionFile(id, name string, max int64) ([]byte, int64, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, 0, err
	}
	if err := checkPath(name); err != nil {
		return nil, 0, err
	}
	f, fi, err := se.sb.OpenFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, noSuchFile(name)
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, 0, policy.Invalid("path", "%s: not a regular file in the workspace", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, 0, &policy.SetupError{Stage: "workspace", Err: err}
	}
	return data, fi.Size(), nil
}

// notExist is an ErrInvalid that is also fs.ErrNotExist.
type notExist struct{ error }

func (e *notExist) Is(target error) bool { return target == fs.ErrNotExist }
func (e *notExist) Unwrap() error        { return e.error }

// WriteSessionFile creates or replaces a file of the session's
// workspace (see executor.Sandbox.WriteFile): past the workspace's room
// it is refused and nothing is left of it.
func (s *Server) WriteSessionFile(id, name string, data []byte) error {
	se, err := s.session(id)
	if err != nil {
		return err
	}
	if int64(len(data)) > s.cfg.MaxRequest {
		return policy.Invalid("content", "%d bytes, more than the server's --max-request of %d", len(data), s.cfg.MaxRequest)
	}
	if err := checkPath(name); err != nil {
		return err
	}
	if err := roomFor(se, name, int64(len(data))); err != nil {
		return err
	}
	if _, err := se.sb.WriteFile(name, bytes.NewReader(data), 0o644); err != nil {
		return fileError(se, name, err)
	}
	return nil
}

// SessionFiles lists the session's workspace (at most max entries; the
// listing says how many more there are).
func (s *Server) SessionFiles(id string, max int) (FileListing, error) {
	se, err := s.session(id)
	if err != nil {
		return FileListing{}, err
	}
	return listFiles(se, max)
}

// Capabilities is what GET /v1/capabilities returns: the host's
// enforcement, the languages with their versions (asked once, in a
// sandbox), the served limits and the server's own bounds.
func (s *Server) Capabilities() Capabilities {
	p := s.pol
	return Capabilities{
		Host:      s.ex.Capabilities(),
		Languages: s.langs(),
		Limits: Limits{Timeout: p.Timeout, CPUTime: p.CPUTime, Memory: p.MemoryLimit(), Pids: p.PidsLimit(), CPUs: p.CPUs,
			FileSize: p.FileSize, OpenFiles: p.OpenFiles, MaxOutput: p.MaxOutput, Net: p.Network()},
		Server: ServerLimits{MaxConcurrent: s.cfg.MaxConcurrent, MaxQueue: s.cfg.MaxQueue, MaxRequest: s.cfg.MaxRequest,
			MaxSessions: s.cfg.MaxSessions, TenantMaxSessions: s.cfg.TenantMaxSessions, TenantMaxConcurrent: s.cfg.TenantMaxConcurrent,
			SessionIdle: policy.Duration(s.cfg.SessionIdle), PoolReady: s.ex.PoolStats().Ready},
		Sandboxes: s.sandboxLimitsInfo(),
	}
}

// Policy returns the served policy (validated, defaults filled in).
func (s *Server) Policy() policy.Policy { return s.pol }

// LanguageNames lists the installed languages.
func (s *Server) LanguageNames() []string { return s.languageNames() }

// Languages lists the installed languages with their aliases: every name
// a request's language may give.
func (s *Server) Languages() []executor.Language { return s.ex.Languages() }

// runObserved runs req in a sandbox of its own and counts it in the
// metrics: the one execution of every one-shot route, HTTP or direct (a
// session's is runSession).
func (s *Server) runObserved(ctx context.Context, kind string, req executor.Request) (*executor.Result, error) {
	start := time.Now()
	res, err := s.ex.Execute(ctx, req)
	err = s.killedByDrain(err)
	s.m.observe(kind, res, err, time.Since(start))
	return res, err
}
