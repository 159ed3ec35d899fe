package server

import (
	"errors"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// A sandbox's files stream both ways, any size up to its workspace's
// limit (the library counts it; the request body cap is not applied),
// with Range on a download.

// SandboxFiles is GET /v1/sandboxes/{id}/files.
type SandboxFiles struct {
	Files []FileEntry `json:"files"`
	// Total counts the entries found; Omitted those not returned (the
	// listing's caps: ?limit, at most 10000).
	Total   int `json:"total"`
	Omitted int `json:"omitted"`
}

func (s *Server) handleSandboxFiles(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			s.fail(w, 0, policy.Invalid("limit", "%q: a number of entries from 1 to 10000", v), nil)
			return
		}
		limit = n
	}
	l, err := ls.sb.Files(executor.FileLimits{MaxFiles: limit, MaxFileBytes: 1, MaxTotal: 1})
	if err != nil {
		s.fail(w, s.closedStatus(err), err, nil)
		return
	}
	out := SandboxFiles{Files: []FileEntry{}, Total: l.Total, Omitted: l.Omitted}
	for _, f := range l.Files {
		out.Files = append(out.Files, FileEntry{Path: f.Path, Size: f.Size, Skipped: f.Skipped})
	}
	writeJSON(w, http.StatusOK, out)
}

// failFile answers a file error: 404 naming the path when there is no
// such file.
func (s *Server) failFile(w http.ResponseWriter, name string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		s.fail(w, http.StatusNotFound, policy.Invalid("path", "%s: no such file in the sandbox's /workspace", name), nil)
		return
	}
	s.fail(w, s.closedStatus(err), err, nil)
}

func (s *Server) handleSandboxDownload(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	name := r.PathValue("path")
	f, fi, err := ls.sb.OpenFile(name)
	if err != nil {
		s.failFile(w, name, err)
		return
	}
	defer f.Close()
	// Never rendered as a page of the server's origin, whatever it holds.
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// FileWritten is the answer of a PUT.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

func (s *Server) handleSandboxUpload(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	name := r.PathValue("path")
	mode := fs.FileMode(0o644)
	if v := r.URL.Query().Get("mode"); v != "" {
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil || m > 0o777 {
			s.fail(w, 0, policy.Invalid("mode", "%q: an octal permission mode such as 0755", v), nil)
			return
		}
		mode = fs.FileMode(m)
	}
	n, err := ls.sb.WriteFile(name, r.Body, mode)
	if err != nil {
		s.failFile(w, name, err)
		return
	}
	writeJSON(w, http.StatusCreated, FileWritten{Path: name, Size: n})
}

func (s *Server) handleSandboxRemove(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	name := r.PathValue("path")
	if err := ls.sb.Remove(name); err != nil {
		s.failFile(w, name, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
