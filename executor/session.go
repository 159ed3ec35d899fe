package executor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// SessionConfig configures a Session.
type SessionConfig struct {
	// Policy governs every execution of the session. Its Workspace must
	// be empty: the session makes its own.
	Policy policy.Policy
	// IdleTimeout closes the session when no execution ran for that long.
	// 0 = 10 minutes.
	IdleTimeout time.Duration
}

// Session keeps a /workspace across executions: the stateful mode agent
// frameworks need. Each execution is a fresh sandbox over the same
// workspace, one at a time. A session is closed by Close, by its idle
// timeout, or by the Executor's Close; its workspace is then removed.
type Session struct {
	e    *Executor
	cfg  SessionConfig
	ws   *workspace
	idle *time.Timer

	mu     sync.Mutex // serialises executions and Close
	closed bool
}

// errSessionClosed is returned by a closed session.
var errSessionClosed = policy.Invalid("session", "closed (by Close or its idle timeout)")

// NewSession starts a session with an empty workspace.
func (e *Executor) NewSession(cfg SessionConfig) (*Session, error) {
	if cfg.Policy.Workspace != "" {
		return nil, policy.Invalid("workspace", "a session makes its own workspace; leave policy.workspace empty")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	ws, err := newWorkspace(e.cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	s := &Session{e: e, cfg: cfg, ws: ws}
	// The idle timer exists before anything can call Close (the timer
	// itself, or the Executor's Close once s is in e.sessions): s.mu
	// orders its assignment before every use of it.
	s.mu.Lock()
	s.idle = time.AfterFunc(cfg.IdleTimeout, func() { s.Close() })
	s.mu.Unlock()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		s.Close()
		return nil, errClosed
	}
	e.sessions[s] = true
	e.mu.Unlock()
	return s, nil
}

// Execute runs req in a fresh sandbox over the session's workspace, under
// the session's policy (req.Policy must be the zero value).
func (s *Session) Execute(ctx context.Context, req Request) (*Result, error) {
	if req.Launched != nil {
		defer req.Launched.Close() // after a Start, a no-op
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errSessionClosed
	}
	s.idle.Stop()
	defer s.idle.Reset(s.cfg.IdleTimeout)
	req.Policy = s.cfg.Policy
	return s.e.execute(ctx, req, s.ws)
}

// Close ends the session and removes its workspace. It waits for a
// running execution to end. Closing twice is harmless.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.idle.Stop()
	s.e.mu.Lock()
	delete(s.e.sessions, s)
	s.e.mu.Unlock()
	return s.ws.remove()
}

// Close closes every session and refuses later executions.
func (e *Executor) Close() error {
	e.mu.Lock()
	e.closed = true
	var open []*Session
	for s := range e.sessions {
		open = append(open, s)
	}
	var live []*Sandbox
	for _, s := range e.sandboxes {
		live = append(live, s)
	}
	e.mu.Unlock()
	var errs []error
	for _, s := range open {
		errs = append(errs, s.Close())
	}
	for _, s := range live {
		s.closeWith(errClosed)
	}
	if e.pool != nil {
		errs = append(errs, e.pool.close())
	}
	if e.live != nil {
		e.live.close()
	}
	if e.groups != nil {
		e.groups.close() // after every run it may serve
	}
	return errors.Join(errs...)
}
