package server

import (
	"errors"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// session is an open session and what its listing shows.
type session struct {
	s    *executor.Session
	info SessionInfo // info.Tenant owns it
	// turn is held by the request running in the session: the session
	// runs one at a time, and a request waiting for its turn must not
	// hold a run slot meanwhile.
	turn chan struct{}
}

// take waits for the session's turn (false: the client went away).
func (se *session) take(r *http.Request) bool {
	select {
	case se.turn <- struct{}{}:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (se *session) done() { <-se.turn }

// SessionInfo describes a session.
type SessionInfo struct {
	ID string `json:"id"`
	// Tenant is the credential that made it, the only one that sees it
	// (see LocalTenant): "token:NAME", "uid:N" or "local".
	Tenant      string          `json:"tenant"`
	Created     time.Time       `json:"created"`
	IdleTimeout policy.Duration `json:"idle_timeout"`
	Policy      policy.Policy   `json:"policy"`
}

// SessionRequest is the body of POST /v1/sessions (it may be empty).
type SessionRequest struct {
	Env         map[string]string `json:"env,omitempty"`
	Policy      *Overrides        `json:"policy,omitempty"`
	IdleTimeout *policy.Duration  `json:"idle_timeout,omitempty"`
}

// prune forgets sessions that ended (idle timeout). smu held.
func (s *Server) prune() {
	for id, se := range s.sessions {
		if se.s.Closed() {
			delete(s.sessions, id)
		}
	}
}

func (s *Server) handleSessionCreate(w http.ResponseWriter, r *http.Request) {
	var b SessionRequest
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
	info, err := s.openSession(r.Context(), &b)
	var full sessionsFull
	var tfull tenantSessionsFull
	switch {
	case errors.As(err, &full), errors.As(err, &tfull):
		s.fail(w, http.StatusTooManyRequests, err, nil)
		return
	case err != nil:
		s.fail(w, 0, err, nil)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+info.ID)
	writeJSON(w, http.StatusCreated, info)
}

type sessionsFull int

func (n sessionsFull) Error() string {
	return "server: " + strconv.Itoa(int(n)) + " sessions open, the server's --max-sessions; close one or retry later"
}
func (sessionsFull) Is(target error) bool { return target == policy.ErrUnavailable }

func errSessionsFull(n int) error { return sessionsFull(n) }

// tenantSessionsFull refuses a session past Config.TenantMaxSessions.
type tenantSessionsFull int

func (n tenantSessionsFull) Error() string {
	return "server: " + strconv.Itoa(int(n)) + " sessions open for this credential, the server's --tenant-max-sessions; close one or retry later"
}
func (tenantSessionsFull) Is(target error) bool { return target == policy.ErrUnavailable }

// lookup returns the open session of the request's {id} that is its
// tenant's, or answers 404: another tenant's session gets the very
// answer of an id that does not exist.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *session {
	se, err := s.sessionOf(ctxTenant(r.Context()), r.PathValue("id"))
	if err != nil {
		s.fail(w, http.StatusNotFound, err, nil)
	}
	return se
}

func (s *Server) handleSessionList(w http.ResponseWriter, r *http.Request) {
	tenant := ctxTenant(r.Context())
	s.smu.Lock()
	s.prune()
	out := []SessionInfo{}
	for _, se := range s.sessions {
		if se.info.Tenant == tenant {
			out = append(out, se.info)
		}
	}
	s.smu.Unlock()
	slices.SortFunc(out, func(a, b SessionInfo) int { return a.Created.Compare(b.Created) })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	if se := s.lookup(w, r); se != nil {
		writeJSON(w, http.StatusOK, se.info)
	}
}

func (s *Server) handleSessionDelete(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	if err := s.closeSession(se); err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleSessionRun(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	var b RunRequest
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	req, err := s.runToRequest(&b, true)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if !se.take(r) {
		return
	}
	defer se.done()
	s.serveRun(w, r, "session", req, se.s, int64(se.info.Policy.MaxOutput))
}

func (s *Server) handleSessionExec(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	var b ExecRequest
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	req, err := s.execToRequest(&b, true)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if !se.take(r) {
		return
	}
	defer se.done()
	s.serveRun(w, r, "session", req, se.s, int64(se.info.Policy.MaxOutput))
}

// FileEntry is one entry of a session's file listing.
type FileEntry struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Skipped string `json:"skipped,omitempty"`
}

func (s *Server) handleSessionFiles(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	files, err := se.s.Files(executor.FileLimits{MaxFiles: 1000, MaxFileBytes: 1, MaxTotal: 1})
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	out := []FileEntry{}
	for _, f := range files {
		out = append(out, FileEntry{Path: f.Path, Size: f.Size, Skipped: f.Skipped})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSessionDownload(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	name := r.PathValue("path")
	data, size, err := se.s.ReadFile(name, s.cfg.MaxRequest+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.fail(w, http.StatusNotFound, policy.Invalid("path", "%s: no such file in the session's workspace", name), nil)
		return
	case err != nil:
		s.fail(w, 0, err, nil)
		return
	case size > s.cfg.MaxRequest || int64(len(data)) > s.cfg.MaxRequest:
		s.fail(w, http.StatusRequestEntityTooLarge, policy.Invalid("path", "%s is %d bytes, more than the server's --max-request of %d", name, size, s.cfg.MaxRequest), nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

func (s *Server) handleSessionUpload(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	data, err := s.readBody(w, r)
	if err != nil {
		s.failDecode(w, err)
		return
	}
	if err := se.s.WriteFile(r.PathValue("path"), data); err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// closeSessions closes every session (Drain).
func (s *Server) closeSessions() {
	s.smu.Lock()
	open := s.sessions
	s.sessions = map[string]*session{}
	s.smu.Unlock()
	for _, se := range open {
		se.s.Close()
	}
}

// sessionCount is the number of open sessions (metrics).
func (s *Server) sessionCount() int {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.prune()
	return len(s.sessions)
}
