package executor

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// File is a file of the workspace returned after a run.
type File struct {
	// Path is relative to /workspace.
	Path string `json:"path"`
	// Size is the file's size; Data holds at most the per-file cap of it.
	Size int64  `json:"size"`
	Data []byte `json:"data,omitempty"`
	// Truncated is set when Data holds less than Size.
	Truncated bool `json:"truncated,omitempty"`
	// Skipped says why a non-regular file was not read: "symlink",
	// "fifo", "device", "socket", or "cap" when a count or size cap was
	// reached.
	Skipped string `json:"skipped,omitempty"`
}

// FileLimits cap what a run may return. Zero fields take the defaults.
type FileLimits struct {
	MaxFiles     int   // entries returned; default 100
	MaxFileBytes int64 // bytes read of one file; default 1 MiB
	MaxTotal     int64 // bytes read in all; default 8 MiB
	MaxDepth     int   // directory depth walked; default 16
}

func (l FileLimits) withDefaults() FileLimits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 100
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 1 << 20
	}
	if l.MaxTotal <= 0 {
		l.MaxTotal = 8 << 20
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 16
	}
	return l
}

// workspace is a run's or a session's /workspace: a host directory,
// bound into the sandbox, owned by the host uid the sandbox runs as.
type workspace struct {
	dir      string
	uid, gid int
	// flags are the directory's inode flags when made (dirFlags), which
	// a reset checks: its program owns it and may set some (chattr).
	flags    uint32
	flagsErr error
}

// dirFlags returns a directory's inode flags (FS_IOC_GETFLAGS).
func dirFlags(dir string) (uint32, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
}

// newWorkspace makes an empty workspace directory under base ("" = the
// system temp dir), mode 0700, owned by the sandbox's host uid.
func newWorkspace(base string) (*workspace, error) {
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "airlock-ws-")
	if err != nil {
		return nil, &policy.SetupError{Stage: "workspace", Err: err}
	}
	w := &workspace{dir: dir, uid: os.Getuid(), gid: os.Getgid()}
	if w.uid == 0 {
		// As root the sandbox runs as host 65534 (see nsjail.Spec.HostUID).
		w.uid, w.gid = 65534, 65534
	}
	if err := os.Chown(dir, w.uid, w.gid); err != nil {
		os.RemoveAll(dir)
		return nil, &policy.SetupError{Stage: "workspace", Err: err}
	}
	w.flags, w.flagsErr = dirFlags(dir)
	return w, nil
}

// checkName requires a clean relative path inside the workspace.
func checkName(name string) error {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == "." || strings.HasPrefix(name, "../") || name == ".." || strings.ContainsRune(name, 0) {
		return policy.Invalid("file name", "%q must be a clean path relative to /workspace", name)
	}
	return nil
}

// write creates name in the workspace with data. It never follows a
// symlink out of the workspace (os.Root), and refuses to replace one: in
// a session the program may have planted links.
func (w *workspace) write(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return writeError(name, err)
		}
		root.Chown(d, w.uid, w.gid)
	}
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return policy.Invalid("file", "%s exists in the workspace and is not a regular file", name)
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return writeError(name, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chown(name, w.uid, w.gid)
	}
	if err != nil {
		// The host's side (a full or read-only WorkDir), not the request.
		return &policy.SetupError{Stage: "workspace", Err: err}
	}
	return nil
}

// writeError classifies a failure to make name or its directory: the
// host's side (full, read-only, I/O) is a SetupError; anything else is
// the path's fault (a component that is a file, or a link the program
// planted, leading out of the workspace: os.Root refuses it) and
// ErrInvalid.
func writeError(name string, err error) error {
	for _, e := range []error{unix.ENOSPC, unix.EDQUOT, unix.EROFS, unix.EIO, unix.ENOMEM} {
		if errors.Is(err, e) {
			return &policy.SetupError{Stage: "workspace", Err: err}
		}
	}
	return policy.Invalid("file", "%s: cannot be made in the workspace (%v): a path component is not a directory, or is a link", name, err)
}

// collect returns the workspace's files, except those in skip. It walks
// with O_NOFOLLOW from a directory fd: a symlink is reported, never
// followed; FIFOs, sockets and devices are reported, never opened (no
// blocking on a planted FIFO, no reading a device); counts, sizes and
// depth are capped.
func (w *workspace) collect(lim FileLimits, skip map[string]bool) ([]File, error) {
	lim = lim.withDefaults()
	fd, err := unix.Open(w.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(fd), w.dir) // owns fd
	defer dir.Close()
	c := &collector{lim: lim, skip: skip}
	err = c.walk(dir, "", 0)
	return c.files, err
}

type collector struct {
	lim   FileLimits
	skip  map[string]bool
	files []File
	total int64
}

func (c *collector) walk(dir *os.File, prefix string, depth int) error {
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return err
	}
	dirfd := int(dir.Fd())
	for _, e := range ents {
		rel := filepath.Join(prefix, e.Name())
		if c.skip[rel] {
			continue
		}
		if len(c.files) >= c.lim.MaxFiles {
			c.files = append(c.files, File{Path: rel, Skipped: "cap"})
			return nil
		}
		switch t := e.Type(); {
		case t.IsDir():
			if depth+1 >= c.lim.MaxDepth {
				c.files = append(c.files, File{Path: rel + "/", Skipped: "cap"})
				continue
			}
			fd, err := unix.Openat(dirfd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			sub := os.NewFile(uintptr(fd), rel) // owns fd
			err = c.walk(sub, rel, depth+1)
			sub.Close()
			if err != nil {
				return err
			}
		case t&os.ModeSymlink != 0:
			c.files = append(c.files, File{Path: rel, Skipped: "symlink"})
		case t&os.ModeNamedPipe != 0:
			c.files = append(c.files, File{Path: rel, Skipped: "fifo"})
		case t&os.ModeSocket != 0:
			c.files = append(c.files, File{Path: rel, Skipped: "socket"})
		case t&os.ModeDevice != 0:
			c.files = append(c.files, File{Path: rel, Skipped: "device"})
		case t.IsRegular():
			c.files = append(c.files, c.read(dirfd, e.Name(), rel))
		}
	}
	return nil
}

// read opens a regular file without following links or blocking, and
// checks it is still regular once open (it may have been swapped).
func (c *collector) read(dirfd int, name, rel string) File {
	f := File{Path: rel}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		f.Skipped = "unreadable"
		return f
	}
	file := os.NewFile(uintptr(fd), rel)
	defer file.Close()
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Skipped = "not regular"
		return f
	}
	f.Size = fi.Size()
	n := min(f.Size, c.lim.MaxFileBytes, c.lim.MaxTotal-c.total)
	if n < 0 {
		n = 0
	}
	f.Data, _ = io.ReadAll(io.LimitReader(file, n))
	c.total += int64(len(f.Data))
	f.Truncated = int64(len(f.Data)) < f.Size
	return f
}

// remove removes the workspace, whatever modes its program left on the
// directories in it (it owns them: they are no obstacle to its uid, but
// are to a rootless supervisor's, which is the same uid without
// CAP_DAC_OVERRIDE).
func (w *workspace) remove() error {
	if os.RemoveAll(w.dir) == nil {
		return nil
	}
	openUp(w.dir)
	return os.RemoveAll(w.dir)
}

// openUp makes dir and every directory below it (not through symlinks)
// readable, writable and searchable by its owner.
func openUp(dir string) {
	if os.Chmod(dir, 0o700) != nil {
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			openUp(filepath.Join(dir, e.Name()))
		}
	}
}

// reset empties the workspace for a recycled sandbox's next request and
// restores its mode (the program owns it and may have changed it); an
// error means it cannot be reused: a file the supervisor cannot remove,
// extended attributes on the directory itself other than an LSM's
// security.* (user.*, or a default ACL that would shape the next
// request's files), or inode flags it did not have (chattr's, casefold,
// encryption).
func (w *workspace) reset() error {
	if err := os.Chmod(w.dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := filepath.Join(w.dir, e.Name())
		if os.RemoveAll(name) != nil {
			if e.IsDir() {
				openUp(name)
			}
			if err := os.RemoveAll(name); err != nil {
				return err
			}
		}
	}
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(w.dir, buf)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name != "" && !strings.HasPrefix(name, "security.") {
			return errors.New("the workspace has extended attributes")
		}
	}
	if flags, err := dirFlags(w.dir); w.flagsErr == nil && (err != nil || flags != w.flags) {
		return errors.New("the workspace's inode flags changed")
	}
	return nil
}
