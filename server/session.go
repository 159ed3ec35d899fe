package server

import (
	"errors"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// session is an open session: a live sandbox (executor.Sandbox) and
// what its listing shows. Each run or exec is a process in it; what a
// process leaves running in the background lives on into later calls
// until the session closes (DELETE, its idle timeout, its lifetime, or
// the server's drain), which kills every process in it.
type session struct {
	sb   *executor.Sandbox
	info SessionInfo // info.Tenant owns it; the fields below Policy are filled in by infoNow
}

// closed reports whether the session's sandbox has ended.
func (se *session) closed() bool { return se.sb.Err() != nil }

// infoNow is se's listing with the sandbox's current state.
func (se *session) infoNow() SessionInfo {
	info := se.info
	si := se.sb.Info()
	info.ExpiresAt, info.Processes, info.MemoryBytes, info.Workspace = si.ExpiresAt, si.Processes, si.Memory, si.Workspace
	return info
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID string `json:"id"`
	// Tenant is the credential that made it, the only one that sees it
	// (see LocalTenant): "token:NAME", "uid:N" or "local".
	Tenant      string          `json:"tenant"`
	Created     time.Time       `json:"created"`
	IdleTimeout policy.Duration `json:"idle_timeout"`
	Policy      policy.Policy   `json:"policy"`
	// ExpiresAt is the end of the session's lifetime (SessionLifetime
	// from its creation), whatever its activity.
	ExpiresAt time.Time `json:"expires_at"`
	// Processes is how many of the processes its runs and execs started
	// run now (not what they left in the background: those are the
	// sandbox's, killed when it closes).
	Processes int `json:"processes"`
	// MemoryBytes is what its processes use now, together (0 if the host
	// cannot tell).
	MemoryBytes int64 `json:"memory_bytes"`
	// Workspace is /workspace's use and limit in bytes: a tmpfs of the
	// session's own, never the host's disk.
	Workspace executor.WorkspaceUsage `json:"workspace"`
}

// SessionLifetime is the longest a session lives, from its creation,
// however active: its sandbox is then closed as by DELETE.
const SessionLifetime = 24 * time.Hour

// SessionRequest is the body of POST /v1/sessions (it may be empty).
type SessionRequest struct {
	Env         map[string]string `json:"env,omitempty"`
	Policy      *Overrides        `json:"policy,omitempty"`
	IdleTimeout *policy.Duration  `json:"idle_timeout,omitempty"`
}

// prune forgets sessions that ended (idle timeout). smu held.
func (s *Server) prune() {
	for id, se := range s.sessions {
		if se.closed() {
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
	var out []*session
	for _, se := range s.sessions {
		if se.info.Tenant == tenant {
			out = append(out, se)
		}
	}
	s.smu.Unlock()
	infos := []SessionInfo{}
	for _, se := range out {
		infos = append(infos, se.infoNow())
	}
	slices.SortFunc(infos, func(a, b SessionInfo) int { return a.Created.Compare(b.Created) })
	writeJSON(w, http.StatusOK, infos)
}

func (s *Server) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	if se := s.lookup(w, r); se != nil {
		writeJSON(w, http.StatusOK, se.infoNow())
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
	s.serveSession(w, r, se, req)
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
	s.serveSession(w, r, se, req)
}

// FileEntry is one entry of a session's file listing.
type FileEntry struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Skipped string `json:"skipped,omitempty"`
}

// FileListing is a session's file listing: at most its cap of entries;
// Total were found, Omitted of them are not listed.
type FileListing struct {
	Files   []FileEntry `json:"files"`
	Total   int         `json:"total"`
	Omitted int         `json:"omitted"`
}

// The headers of GET /v1/sessions/{id}/files (whose body is the array
// of entries, as before there were counts): how many entries were
// found, and how many of them the listing leaves out.
const (
	headerFilesTotal   = "Airlock-Files-Total"
	headerFilesOmitted = "Airlock-Files-Omitted"
)

// maxListing is the most entries a session's file listing holds.
const maxListing = 1000

func (s *Server) handleSessionFiles(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	l, err := listFiles(se, maxListing)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	w.Header().Set(headerFilesTotal, strconv.Itoa(l.Total))
	w.Header().Set(headerFilesOmitted, strconv.Itoa(l.Omitted))
	writeJSON(w, http.StatusOK, l.Files)
}

// listDepth is how deep a session's file listing walks (as an exec's
// collected files: executor.FileLimits' default).
const listDepth = 16

// listFiles lists se's workspace (its files, links and others; not its
// directories), in path order, at most max entries, without opening any.
func listFiles(se *session, max int) (FileListing, error) {
	infos, err := se.sb.ListDir(".", listDepth)
	if err != nil {
		return FileListing{}, err
	}
	out := FileListing{Files: []FileEntry{}}
	for _, fi := range infos {
		if fi.Type == "dir" {
			continue
		}
		out.Total++
		if len(out.Files) == max {
			out.Omitted++
			continue
		}
		e := FileEntry{Path: fi.Path, Size: fi.Size}
		if fi.Type != "file" {
			e.Skipped = fi.Type // symlink, other: listed, never followed
		}
		out.Files = append(out.Files, e)
	}
	return out, nil
}

// checkPath refuses a workspace path that is not clean and relative
// (the library would resolve "../x" to "x" inside the workspace: a
// request that says "..", or an absolute path, is refused instead, as it
// was before sessions were live).
func checkPath(name string) error {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == "." || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0) {
		return policy.Invalid("path", "%q must be a clean path relative to /workspace (no .., not absolute)", name)
	}
	return nil
}

// noSuchFile is the error of a path that is not in the workspace.
func noSuchFile(name string) error {
	return &notExist{policy.Invalid("path", "%s: no such file in the session's workspace", name)}
}

// handleSessionDownload streams a file of any size, with Range,
// If-Modified-Since and HEAD as http.ServeContent answers them.
func (s *Server) handleSessionDownload(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	name := r.PathValue("path")
	if err := checkPath(name); err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	f, fi, err := se.sb.OpenFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.fail(w, http.StatusNotFound, noSuchFile(name), nil)
		return
	case err != nil:
		s.fail(w, 0, err, nil)
		return
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		s.fail(w, 0, policy.Invalid("path", "%s: not a regular file in the workspace", name), nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// handleSessionUpload streams the body into the file, made by the
// sandbox's user (its parent directories too). It is bounded by the
// workspace's limit, not by --max-request: a body that says it is
// larger than the room left is refused before a byte is written (413),
// one that runs out of room while written is refused (507) and its
// partial file removed.
func (s *Server) handleSessionUpload(w http.ResponseWriter, r *http.Request) {
	se := s.lookup(w, r)
	if se == nil {
		return
	}
	name := r.PathValue("path")
	if err := checkPath(name); err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if err := roomFor(se, name, r.ContentLength); err != nil {
		s.fail(w, http.StatusRequestEntityTooLarge, err, nil)
		return
	}
	if _, err := se.sb.WriteFile(name, r.Body, 0o644); err != nil {
		status := 0
		if noSpace(err) {
			status = http.StatusInsufficientStorage
			err = workspaceFull(se, name)
		}
		s.fail(w, status, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// roomFor refuses n bytes (-1: unknown, never refused) for name when the
// workspace has not that much room, counting what replacing name frees.
func roomFor(se *session, name string, n int64) error {
	ws := se.sb.Info().Workspace
	if n < 0 || ws.Limit <= 0 {
		return nil
	}
	free := ws.Limit - ws.Used
	if fi, err := se.sb.Stat(name); err == nil && fi.Type == "file" {
		free += fi.Size
	}
	if n > free {
		return policy.Invalid("content", "%d bytes, more than the %d free in the session's workspace (%d of its %d bytes used): remove files first, or open a session with a larger workspace", n, max(free, 0), ws.Used, ws.Limit)
	}
	return nil
}

// noSpace reports whether err is the workspace's limit: the library's
// refusal naming workspace_size (ENOSPC, EDQUOT), or the errno itself.
func noSpace(err error) bool {
	var inv *policy.InvalidError
	return errors.As(err, &inv) && inv.Field == "workspace_size" || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// workspaceFull is the refusal of a write of name that ran out of room:
// its partial file is removed.
func workspaceFull(se *session, name string) error {
	limit := se.sb.Info().Workspace.Limit
	se.sb.Remove(name)
	return policy.Invalid("content", "%s: no space left on device: the session's workspace is full (its limit is %d bytes); the partial file was removed: remove files first, or open a session with a larger workspace", name, limit)
}

// closeSessions closes every session (Drain).
func (s *Server) closeSessions() {
	s.smu.Lock()
	open := s.sessions
	s.sessions = map[string]*session{}
	s.smu.Unlock()
	for _, se := range open {
		se.sb.Close()
	}
}

// sessionCount is the number of open sessions (metrics).
func (s *Server) sessionCount() int {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.prune()
	return len(s.sessions)
}
