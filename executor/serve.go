// Exported hooks for servers (airlock serve): a session's files without
// running anything (each counts as activity for the idle timeout), and
// the installed language table.

package executor

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// WriteFile creates or replaces name (a clean path relative to
// /workspace) in the session's workspace with data, without running
// anything. It never follows a link out of the workspace and refuses to
// replace anything but a regular file (the program may have planted
// links). It waits for a running execution to end.
func (s *Session) WriteFile(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errSessionClosed
	}
	s.idle.Reset(s.cfg.IdleTimeout)
	return s.ws.write(name, data)
}

// ReadFile returns up to max bytes of the regular file name in the
// session's workspace, and its size. It opens the file without following
// a link in its last component (nor any out of the workspace) and
// without blocking on a FIFO: anything but a regular file is ErrInvalid,
// a missing one fs.ErrNotExist. It waits for a running execution to end.
func (s *Session) ReadFile(name string, max int64) ([]byte, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, errSessionClosed
	}
	s.idle.Reset(s.cfg.IdleTimeout)
	if err := checkName(name); err != nil {
		return nil, 0, err
	}
	root, err := os.OpenRoot(s.ws.dir)
	if err != nil {
		return nil, 0, &policy.SetupError{Stage: "workspace", Err: err}
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, err
		}
		return nil, 0, policy.Invalid("file", "%s: not a regular file in the workspace", name)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, policy.Invalid("file", "%s: not a regular file in the workspace", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, 0, &policy.SetupError{Stage: "workspace", Err: err}
	}
	return data, fi.Size(), nil
}

// Files lists the session's workspace as a run's collected files are
// (see Request.CollectFiles), within lim. It waits for a running
// execution to end.
func (s *Session) Files(lim FileLimits) ([]File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errSessionClosed
	}
	s.idle.Reset(s.cfg.IdleTimeout)
	return s.ws.collect(lim, nil)
}

// Closed reports whether the session has ended (by Close, its idle
// timeout or the Executor's Close). It does not wait: a session that is
// executing is open.
func (s *Session) Closed() bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	return s.closed
}

// Languages returns the installed languages, one per canonical name,
// sorted by name, with the interpreter's full path.
func (e *Executor) Languages() []Language {
	var out []Language
	for _, n := range names(e.langs()) {
		l := e.langs()[n]
		l.Aliases = slices.Clone(l.Aliases)
		out = append(out, l)
	}
	return out
}

// Language returns the installed language name (or an alias) stands for:
// ErrUnsupported when the table knows it but this host lacks its
// interpreter, ErrInvalid when it is unknown.
func (e *Executor) Language(name string) (Language, error) { return e.language(name) }
