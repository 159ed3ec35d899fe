package executor

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// A live sandbox's files are those of its own tmpfs /workspace (and, for
// code, its /tmp): the supervisor reaches them through directory fds its
// pid 1 opened inside (nsjail.Live.OpenDir), as an os.Root, which never
// follows a link out of the directory. Nothing of them is on the host's
// disk, and the tmpfs's size bounds them (ENOSPC past it).
//
// As whom: a rootless supervisor is the sandbox's user (its uid is the
// one the sandbox's maps hold), so what it creates is the sandbox's. A
// root supervisor's uid is not mapped in the sandbox (the kernel refuses
// it to create anything there: EOVERFLOW) and would bypass the file
// modes: its file operations run on a thread of their own whose file
// system ids are the sandbox's host ids (setfsuid, setfsgid: the
// capabilities that would override permissions leave its effective set
// with them), and which ends with the operation, never returned to Go's
// pool.
type sandboxFiles struct {
	ws, tmp         *os.File // O_PATH, from inside
	wsRoot, tmpRoot *os.Root
	asUID, asGID    int // -1 = as we are (rootless)
	limit           int64
}

func openSandboxFiles(ctx context.Context, live *nsjail.Live) (*sandboxFiles, error) {
	f := &sandboxFiles{asUID: -1, asGID: -1}
	var err error
	if f.ws, err = live.OpenDir(ctx, false); err == nil {
		f.tmp, err = live.OpenDir(ctx, true)
	}
	if err == nil {
		f.wsRoot, err = os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(f.ws.Fd())))
	}
	if err == nil {
		f.tmpRoot, err = os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(f.tmp.Fd())))
	}
	if err != nil {
		f.close()
		return nil, &policy.SetupError{Stage: "workspace", Err: err}
	}
	if os.Geteuid() == 0 {
		f.asUID, f.asGID = live.HostIDs()
	}
	f.limit = f.usage().Limit
	return f, nil
}

func (f *sandboxFiles) close() {
	for _, r := range []*os.Root{f.wsRoot, f.tmpRoot} {
		if r != nil {
			r.Close()
		}
	}
	for _, d := range []*os.File{f.ws, f.tmp} {
		if d != nil {
			d.Close()
		}
	}
}

// as runs fn as the sandbox's user (see sandboxFiles).
func (f *sandboxFiles) as(fn func() error) error {
	if f.asUID < 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, with its changed ids, ends with
		// this goroutine.
		runtime.LockOSThread()
		// setfsuid and setfsgid return the previous id, never an error:
		// ask again (-1 changes nothing) to know each holds. The group
		// first: it needs the uid that may still change it.
		unix.SetfsgidRetGid(f.asGID)
		unix.SetfsuidRetUid(f.asUID)
		gid, _ := unix.SetfsgidRetGid(-1)
		if uid, _ := unix.SetfsuidRetUid(-1); uid != f.asUID || gid != f.asGID {
			errc <- &policy.SetupError{Stage: "workspace", Err: errors.New("could not take the sandbox's file system ids")}
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func (f *sandboxFiles) usage() WorkspaceUsage {
	var st unix.Statfs_t
	if f == nil || f.ws == nil || unix.Fstatfs(int(f.ws.Fd()), &st) != nil {
		return WorkspaceUsage{}
	}
	return WorkspaceUsage{Used: int64(st.Blocks-st.Bfree) * st.Bsize, Limit: int64(st.Blocks) * st.Bsize}
}

// rel checks a path relative to /workspace (an absolute one inside it is
// taken too) and returns it cleaned; "" is the workspace itself (".").
func rel(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", policy.Invalid("path", "%q has a NUL byte", name)
	}
	if path.IsAbs(name) {
		if name != "/workspace" && !strings.HasPrefix(name, "/workspace/") {
			return "", policy.Invalid("path", "%q is outside /workspace", name)
		}
		name = strings.TrimPrefix(strings.TrimPrefix(name, "/workspace"), "/")
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", policy.Invalid("path", "%q leads out of /workspace", name)
	}
	if c == "" {
		c = "."
	}
	return c, nil
}

// fileError classifies a file operation's failure.
func fileError(name string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return err
	case errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT):
		return &policy.InvalidError{Field: "workspace_size", Reason: name + ": the workspace is full (its workspace_size): " + errno.Error()}
	case errors.As(err, &errno) && errno == syscall.EFBIG:
		return &policy.InvalidError{Field: "file_size", Reason: name + ": past the file size limit"}
	case errors.Is(err, fs.ErrPermission):
		return &policy.InvalidError{Field: "path", Reason: name + ": permission denied (as the sandbox's user)"}
	case errors.Is(err, fs.ErrExist):
		return &policy.InvalidError{Field: "path", Reason: name + ": exists"}
	}
	if strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes") {
		return &policy.InvalidError{Field: "path", Reason: name + ": leads out of /workspace (a link)"}
	}
	return &policy.InvalidError{Field: "path", Reason: err.Error()}
}

func (f *sandboxFiles) write(name string, r io.Reader, mode os.FileMode) (int64, error) {
	c, err := rel(name)
	if err != nil {
		return 0, err
	}
	if c == "." {
		return 0, policy.Invalid("path", "a file needs a name")
	}
	if mode == 0 {
		mode = 0o644
	}
	var n int64
	err = f.as(func() error {
		if d := path.Dir(c); d != "." {
			if err := f.wsRoot.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		w, err := f.wsRoot.OpenFile(c, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK, mode.Perm())
		if err != nil {
			return err
		}
		if fi, err := w.Stat(); err != nil || !fi.Mode().IsRegular() {
			w.Close()
			return &policy.InvalidError{Field: "path", Reason: name + ": not a regular file"}
		}
		n, err = io.Copy(w, r)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		var ie *policy.InvalidError
		if errors.As(err, &ie) {
			return n, err
		}
		return n, fileError(name, err)
	}
	return n, nil
}

// writeTmp writes a file under the sandbox's /tmp (code to run), its
// directory private to the sandbox's user.
func (f *sandboxFiles) writeTmp(name string, data []byte) error {
	return f.as(func() error {
		if err := f.tmpRoot.Mkdir(path.Dir(name), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fileError("/tmp/"+name, err)
		}
		if err := f.tmpRoot.WriteFile(name, data, 0o600); err != nil {
			return fileError("/tmp/"+name, err)
		}
		return nil
	})
}

// FileInfo describes a file of a live sandbox's workspace.
type FileInfo struct {
	Path    string      `json:"path"`
	Name    string      `json:"name"`
	Type    string      `json:"type"` // file | dir | symlink | other
	Size    int64       `json:"size"`
	Mode    os.FileMode `json:"mode"`
	ModTime time.Time   `json:"mtime"`
	Target  string      `json:"symlink_target,omitempty"`
}

func infoOf(f *sandboxFiles, p string, fi os.FileInfo) FileInfo {
	out := FileInfo{Path: p, Name: fi.Name(), Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	switch {
	case fi.Mode().IsRegular():
		out.Type = "file"
	case fi.IsDir():
		out.Type = "dir"
	case fi.Mode()&os.ModeSymlink != 0:
		out.Type = "symlink"
		out.Target, _ = f.wsRoot.Readlink(p)
	default:
		out.Type = "other"
	}
	if p == "." {
		out.Name = "workspace"
	}
	return out
}

// WriteFile writes r to name in the workspace (mode 0 = 0644), making
// its parent directories, all owned by the sandbox's user. It never
// follows a link out of the workspace and replaces only a regular file.
// Past the workspace's size it fails (class invalid, field
// workspace_size); the part written stays.
func (s *Sandbox) WriteFile(name string, r io.Reader, mode os.FileMode) (int64, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	return s.files.write(name, r, mode)
}

// OpenFile opens the regular file name for reading: any size, seekable.
func (s *Sandbox) OpenFile(name string) (io.ReadSeekCloser, os.FileInfo, error) {
	if err := s.open(); err != nil {
		return nil, nil, err
	}
	c, err := rel(name)
	if err != nil {
		return nil, nil, err
	}
	var rf *os.File
	var fi os.FileInfo
	err = s.files.as(func() error {
		f, err := s.files.wsRoot.OpenFile(c, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return fileError(name, err)
		}
		if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return policy.Invalid("path", "%s: not a regular file", name)
		}
		rf = f
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rf, fi, nil
}

// Stat describes name (a link itself, not its target).
func (s *Sandbox) Stat(name string) (FileInfo, error) {
	if err := s.open(); err != nil {
		return FileInfo{}, err
	}
	c, err := rel(name)
	if err != nil {
		return FileInfo{}, err
	}
	var out FileInfo
	err = s.files.as(func() error {
		fi, err := s.files.wsRoot.Lstat(c)
		if err != nil {
			return fileError(name, err)
		}
		out = infoOf(s.files, c, fi)
		return nil
	})
	return out, err
}

// ListDir lists the directory name, depth levels down (1 = its entries).
// At most 10000 entries: past them, an error says so.
func (s *Sandbox) ListDir(name string, depth int) ([]FileInfo, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	c, err := rel(name)
	if err != nil {
		return nil, err
	}
	if depth <= 0 {
		depth = 1
	}
	var out []FileInfo
	err = s.files.as(func() error {
		var walk func(dir string, level int) error
		walk = func(dir string, level int) error {
			d, err := s.files.wsRoot.Open(dir)
			if err != nil {
				return fileError(dir, err)
			}
			ents, err := d.ReadDir(-1)
			d.Close()
			if err != nil {
				return fileError(dir, err)
			}
			for _, ent := range ents {
				p := path.Join(dir, ent.Name())
				fi, err := ent.Info()
				if err != nil {
					continue // gone meanwhile
				}
				if len(out) == 10000 {
					return policy.Invalid("depth", "more than 10000 entries under %s: list fewer levels", name)
				}
				out = append(out, infoOf(s.files, p, fi))
				if ent.IsDir() && level < depth {
					if err := walk(p, level+1); err != nil {
						return err
					}
				}
			}
			return nil
		}
		return walk(c, 1)
	})
	return out, err
}

// MakeDir makes the directory name and its parents; created is false if
// it was there.
func (s *Sandbox) MakeDir(name string) (created bool, err error) {
	if err := s.open(); err != nil {
		return false, err
	}
	c, err := rel(name)
	if err != nil {
		return false, err
	}
	err = s.files.as(func() error {
		if fi, err := s.files.wsRoot.Lstat(c); err == nil {
			if !fi.IsDir() {
				return policy.Invalid("path", "%s exists and is not a directory", name)
			}
			return nil
		}
		created = true
		if err := s.files.wsRoot.MkdirAll(c, 0o755); err != nil {
			return fileError(name, err)
		}
		return nil
	})
	return created, err
}

// Rename moves from to to, both in the workspace.
func (s *Sandbox) Rename(from, to string) error {
	if err := s.open(); err != nil {
		return err
	}
	a, err := rel(from)
	if err != nil {
		return err
	}
	b, err := rel(to)
	if err != nil {
		return err
	}
	if a == "." || b == "." {
		return policy.Invalid("path", "the workspace itself cannot be moved")
	}
	return s.files.as(func() error {
		if err := s.files.wsRoot.Rename(a, b); err != nil {
			return fileError(from, err)
		}
		return nil
	})
}

// Remove removes name, and everything under it if it is a directory.
func (s *Sandbox) Remove(name string) error {
	if err := s.open(); err != nil {
		return err
	}
	c, err := rel(name)
	if err != nil {
		return err
	}
	if c == "." {
		return policy.Invalid("path", "the workspace itself cannot be removed")
	}
	return s.files.as(func() error {
		if _, err := s.files.wsRoot.Lstat(c); err != nil {
			return fileError(name, err)
		}
		if err := s.files.wsRoot.RemoveAll(c); err != nil {
			return fileError(name, err)
		}
		return nil
	})
}

// FilesListing is a workspace's files with their contents, within caps.
type FilesListing struct {
	Files   []File `json:"files"`
	Total   int    `json:"total"`
	Omitted int    `json:"omitted"`
}

// Files returns the workspace's files with their contents, as a run's
// collected files are, within lim, in path order; Total counts every
// entry found, Omitted those not returned.
func (s *Sandbox) Files(lim FileLimits) (FilesListing, error) {
	lim = lim.withDefaults()
	infos, err := s.ListDir(".", lim.MaxDepth)
	if err != nil {
		return FilesListing{}, err
	}
	out := FilesListing{Total: len(infos)}
	var total int64
	for _, fi := range infos {
		if fi.Type == "dir" {
			out.Total--
			continue
		}
		if len(out.Files) == lim.MaxFiles {
			out.Omitted++
			continue
		}
		f := File{Path: fi.Path, Size: fi.Size}
		switch fi.Type {
		case "symlink":
			f.Skipped = "symlink"
		case "other":
			f.Skipped = "other"
		default:
			n := min(fi.Size, lim.MaxFileBytes, lim.MaxTotal-total)
			if n < fi.Size && n <= 0 {
				f.Skipped = "cap"
				break
			}
			if rc, _, err := s.OpenFile(fi.Path); err == nil {
				f.Data, _ = io.ReadAll(io.LimitReader(rc, n))
				rc.Close()
			}
			total += int64(len(f.Data))
			f.Truncated = int64(len(f.Data)) < fi.Size
		}
		out.Files = append(out.Files, f)
	}
	return out, nil
}
