package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	return s.execute(ctx, "exec", req, nil)
}

// Run runs one program in a fresh sandbox, as POST /v1/run.
func (s *Server) Run(ctx context.Context, b *RunRequest) (*executor.Result, error) {
	req, err := s.runToRequest(b, false)
	if err != nil {
		return nil, err
	}
	return s.execute(ctx, "run", req, nil)
}

// SessionExec runs code in the open session id, as its /exec route.
func (s *Server) SessionExec(ctx context.Context, id string, b *ExecRequest) (*executor.Result, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, err
	}
	req, err := s.execToRequest(b, true)
	if err != nil {
		return nil, err
	}
	return s.sessionExecute(ctx, se, req)
}

// SessionRun runs a program in the open session id, as its /run route.
func (s *Server) SessionRun(ctx context.Context, id string, b *RunRequest) (*executor.Result, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, err
	}
	req, err := s.runToRequest(b, true)
	if err != nil {
		return nil, err
	}
	return s.sessionExecute(ctx, se, req)
}

func (s *Server) sessionExecute(ctx context.Context, se *session, req executor.Request) (*executor.Result, error) {
	select {
	case se.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer se.done()
	return s.execute(ctx, "session", req, se.s)
}

// execute runs req (in sess when not nil) under a run slot.
func (s *Server) execute(ctx context.Context, kind string, req executor.Request, sess *executor.Session) (*executor.Result, error) {
	release, _, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.kill, cancel)
	defer stop()
	return s.runObserved(ctx, kind, req, sess)
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
	sess, err := s.ex.NewSession(executor.SessionConfig{Policy: p, IdleTimeout: idle})
	if err != nil {
		return SessionInfo{}, err
	}
	var id [16]byte
	rand.Read(id[:])
	se := &session{s: sess, turn: make(chan struct{}, 1), info: SessionInfo{ID: hex.EncodeToString(id[:]), Tenant: tenant,
		Created: time.Now().UTC(), IdleTimeout: policy.Duration(idle), Policy: p}}
	s.sessions[se.info.ID] = se
	s.log.Info("session opened", "session", se.info.ID, "tenant", tenant)
	return se.info, nil
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
	if se != nil && se.s.Closed() {
		delete(s.sessions, id)
		se = nil
	}
	if se == nil || se.info.Tenant != tenant {
		return nil, policy.Invalid("session", "no open session %q (closed, timed out idle, or never made)", id)
	}
	return se, nil
}

// CloseSession closes LocalTenant's open session id and removes its
// workspace. It waits for a run in it to end: cancel that first.
func (s *Server) CloseSession(id string) error {
	se, err := s.session(id)
	if err != nil {
		return err
	}
	return s.closeSession(se)
}

// closeSession forgets se, closes it and removes its workspace.
func (s *Server) closeSession(se *session) error {
	s.smu.Lock()
	delete(s.sessions, se.info.ID)
	s.smu.Unlock()
	s.log.Info("session closed", "session", se.info.ID, "tenant", se.info.Tenant)
	if err := se.s.Close(); err != nil {
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
	data, size, err := se.s.ReadFile(name, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, &notExist{policy.Invalid("path", "%s: no such file in the session's workspace", name)}
	}
	return data, size, err
}

// notExist is an ErrInvalid that is also fs.ErrNotExist.
type notExist struct{ error }

func (e *notExist) Is(target error) bool { return target == fs.ErrNotExist }
func (e *notExist) Unwrap() error        { return e.error }

// WriteSessionFile creates or replaces a file of the session's
// workspace (see executor.Session.WriteFile).
func (s *Server) WriteSessionFile(id, name string, data []byte) error {
	se, err := s.session(id)
	if err != nil {
		return err
	}
	if int64(len(data)) > s.cfg.MaxRequest {
		return policy.Invalid("content", "%d bytes, more than the server's --max-request of %d", len(data), s.cfg.MaxRequest)
	}
	return se.s.WriteFile(name, data)
}

// SessionFiles lists the session's workspace (at most max entries).
func (s *Server) SessionFiles(id string, max int) ([]FileEntry, error) {
	se, err := s.session(id)
	if err != nil {
		return nil, err
	}
	files, err := se.s.Files(executor.FileLimits{MaxFiles: max, MaxFileBytes: 1, MaxTotal: 1})
	if err != nil {
		return nil, err
	}
	out := []FileEntry{}
	for _, f := range files {
		out = append(out, FileEntry{Path: f.Path, Size: f.Size, Skipped: f.Skipped})
	}
	return out, nil
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

// runObserved runs req (in sess when not nil) and counts it in the
// metrics: the one execution of every route, HTTP or direct.
func (s *Server) runObserved(ctx context.Context, kind string, req executor.Request, sess *executor.Session) (*executor.Result, error) {
	start := time.Now()
	var res *executor.Result
	var err error
	if sess != nil {
		res, err = sess.Execute(ctx, req)
	} else {
		res, err = s.ex.Execute(ctx, req)
	}
	err = s.killedByDrain(err)
	s.m.observe(kind, res, err, time.Since(start))
	return res, err
}
