//go:build linux

package rootfs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// StepError is a failed step of Apply. Its text has no package prefix:
// the init reports it under the stage "rootfs".
type StepError struct {
	Step   string // "bind", "tmpfs", "pivot_root", ...
	Target string
	Err    error
}

func (e *StepError) Error() string {
	if e.Target == "" {
		return e.Step + ": " + e.Err.Error()
	}
	return e.Step + " " + e.Target + ": " + e.Err.Error()
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrSymlink is returned when a mount target path holds a symlink: mounts
// never follow links, so a planted link cannot redirect one (CVE-2021-30465,
// CVE-2019-19921 class).
var ErrSymlink = errors.New("path component is a symlink or not a directory; must be mounted on an ordinary directory")

// Apply builds p on a fresh tmpfs, makes it the root with pivot_root,
// detaches the old root and makes the root read-only.
//
// Every mount is made with the new mount API (fsopen, open_tree,
// mount_setattr, move_mount): attributes are set on a detached mount
// before it is attached, so a read-only bind is never writable, not even
// for a moment, and read-only covers every submount. Targets are opened
// component by component with O_NOFOLLOW, so no symlink is ever followed.
//
// Preconditions: runs in the init, on its locked OS thread, in a mount
// namespace of its own whose mounts are already private, with
// CAP_SYS_ADMIN in the owning user namespace, before any untrusted code.
// staging is an existing host directory the root is attached to until
// pivot_root (it is shadowed only inside this mount namespace).
func Apply(p Plan, staging string) error {
	// Clone every bind source first, before anything is mounted: a source
	// is resolved exactly once, on the host view, and the clone is a
	// detached tree that later mounts cannot shadow.
	clones := make([]int, len(p.Ops))
	defer func() {
		for _, fd := range clones {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, op := range p.Ops {
		if op.Kind != KindBind {
			continue
		}
		fd, err := clone(unix.AT_FDCWD, op.Source, unix.AT_RECURSIVE, op)
		if err == nil && fd > 0 && op.CharDevice && fileType(fd) != unix.S_IFCHR {
			unix.Close(fd)
			err = fmt.Errorf("not a character device: %w", unix.EINVAL)
		}
		if err != nil {
			return &StepError{Step: "bind", Target: op.Source, Err: err}
		}
		clones[i] = fd
	}

	root, err := newFS("tmpfs", p.RootOptions, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return &StepError{Step: "tmpfs", Target: "/", Err: err}
	}
	defer unix.Close(root)
	if err := unix.MoveMount(root, "", unix.AT_FDCWD, staging, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return &StepError{Step: "move_mount", Target: staging, Err: err}
	}
	for i, op := range p.Ops {
		if err := applyOp(root, op, clones[i]); err != nil {
			return &StepError{Step: string(op.Kind), Target: op.Target, Err: err}
		}
	}
	if err := pivot(root); err != nil {
		return &StepError{Step: "pivot_root", Err: err}
	}
	// Last: nothing may be created in the root after this.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return &StepError{Step: "mount_setattr", Target: "/", Err: err}
	}
	return nil
}

// attrs are the mount attributes of op, the same for every kind: always
// nosuid, nodev unless KeepDevices, read-only and noexec as op says (the
// plan sets these; Validate refuses an op that would get fewer than its
// kind's).
func attrs(op Op) int {
	attr := unix.MOUNT_ATTR_NOSUID
	if !op.KeepDevices {
		attr |= unix.MOUNT_ATTR_NODEV
	}
	if op.ReadOnly {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if op.NoExec {
		attr |= unix.MOUNT_ATTR_NOEXEC
	}
	return attr
}

// clone returns a detached copy of path (at dirfd; flags add to open_tree's)
// with op's attributes set on every mount of it, made private so nothing
// propagates between the sandbox and the host; or 0 for a missing path
// when op is optional.
func clone(dirfd int, path string, flags uint, op Op) (int, error) {
	fd, err := unix.OpenTree(dirfd, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|flags)
	if errors.Is(err, unix.ENOENT) && op.Optional {
		return 0, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: uint64(attrs(op)), Propagation: unix.MS_PRIVATE})
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return fd, nil
}

// fileType is the S_IFMT bits of fd's file, or 0 if fstat fails: no
// type, so a check for one fails (and a directory bind is attached on a
// file, which move_mount refuses).
func fileType(fd int) uint32 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Mode & unix.S_IFMT
}

func applyOp(root int, op Op, tree int) error {
	rel := strings.TrimPrefix(op.Target, "/")
	switch op.Kind {
	case KindDir:
		return inDir(root, rel, func(int) error { return nil })
	case KindSymlink:
		return inParent(root, rel, func(dir int, name string) error {
			return unix.Symlinkat(op.Source, dir, name)
		})
	case KindFile:
		return inParent(root, rel, func(dir int, name string) error {
			return writeFileAt(dir, name, op.Data, 0o644)
		})
	case KindTmpfs, KindProc, KindDevpts:
		return mountFS(root, rel, string(op.Kind), op.Options, op)
	case KindMqueue:
		err := mountFS(root, rel, string(op.Kind), op.Options, op)
		if op.Optional && errors.Is(err, unix.ENODEV) {
			return nil // a kernel without POSIX message queues
		}
		return err
	case KindBind:
		if tree == 0 {
			return nil // optional and missing
		}
		return attach(root, rel, tree, true)
	case KindCover:
		// rel (inside the new root) re-bound onto itself with op's
		// attributes (read-only).
		return cloneOnto(root, rel, rel, unix.AT_RECURSIVE, op)
	case KindMask:
		return mask(root, rel, op)
	}
	return fmt.Errorf("unknown kind %q", op.Kind)
}

// mask hides rel (inside the new root) if it exists: a directory under
// a fresh empty read-only tmpfs, anything else under an empty read-only
// file. The file is made in the new root, bound, then unlinked: there is
// no source on any host path to swap (the /dev/null race of
// CVE-2025-31133 cannot happen). (A file of a detached tmpfs would be
// simpler, but kernels before 6.15 refuse to clone from a detached mount.)
func mask(root int, rel string, op Op) error {
	var st unix.Stat_t
	err := unix.Fstatat(root, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return mountFS(root, rel, "tmpfs", "size=4k,nr_inodes=1,mode=0555", op)
	}
	const empty = ".airlock-mask"
	if err := writeFileAt(root, empty, "", 0o444); err != nil {
		return fmt.Errorf("empty file: %w", err)
	}
	defer unix.Unlinkat(root, empty, 0)
	return cloneOnto(root, rel, empty, 0, op)
}

// cloneOnto clones path (inside the new root; flags add to open_tree's)
// with op's attributes and attaches the clone on rel, an existing entry
// of the new root; neither is a symlink followed. A missing optional
// path is skipped.
func cloneOnto(root int, rel, path string, flags uint, op Op) error {
	fd, err := clone(root, path, flags|unix.AT_SYMLINK_NOFOLLOW, op)
	if err != nil || fd == 0 {
		return err
	}
	defer unix.Close(fd)
	return attach(root, rel, fd, false)
}

// mountFS mounts a fresh fstype filesystem with options and op's
// attributes on the directory rel.
func mountFS(root int, rel, fstype, options string, op Op) error {
	mfd, err := newFS(fstype, options, attrs(op))
	if err != nil {
		return err
	}
	defer unix.Close(mfd)
	return attach(root, rel, mfd, false)
}

// newFS creates a detached mount of a fresh fstype filesystem with the
// comma-separated key=value options and the mount attributes attr.
func newFS(fstype, options string, attr int) (int, error) {
	fsfd, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fsfd)
	for _, kv := range strings.Split(options, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if err := unix.FsconfigSetString(fsfd, k, v); err != nil {
			return -1, fmt.Errorf("fsconfig %s: %w", kv, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, attr)
	return mfd, os.NewSyscallError("fsmount", err)
}

// moveMount attaches the detached mount from on the file of the fd to.
func moveMount(from, to int) error {
	return os.NewSyscallError("move_mount", unix.MoveMount(from, "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH))
}

// attach attaches the detached mount mfd on rel, never through a
// symlink: a directory on the directory rel, made if missing; anything
// else, with create, on the regular file rel, made if missing (0644),
// and without, on the existing entry rel, whatever its type (O_PATH).
func attach(root int, rel string, mfd int, create bool) error {
	if fileType(mfd) == unix.S_IFDIR {
		return inDir(root, rel, func(t int) error { return moveMount(mfd, t) })
	}
	flags := unix.O_PATH
	if create {
		flags = unix.O_CREAT | unix.O_RDONLY
	}
	return inParent(root, rel, func(dir int, name string) error {
		// The mode counts only with O_CREAT.
		t, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(t)
		if create && fileType(t) != unix.S_IFREG {
			return ErrSymlink
		}
		return moveMount(mfd, t)
	})
}

// inParent creates the parent directories of rel and calls f with an fd
// of the parent and the last component.
func inParent(root int, rel string, f func(dir int, name string) error) error {
	dir, name := path.Split(rel)
	return inDir(root, strings.TrimSuffix(dir, "/"), func(d int) error { return f(d, name) })
}

// inDir walks rel below root one component at a time, creating missing
// directories (0755) and refusing any symlink, and calls f with an O_PATH
// fd of the last directory: root itself when rel names root.
func inDir(root int, rel string, f func(dir int) error) error {
	parts := strings.Split(rel, "/")
	if slices.Contains(parts, "..") {
		return fmt.Errorf("%q: %w", rel, unix.EINVAL)
	}
	// The walk starts at root itself (not a copy of it: two syscalls per
	// path, some 40 paths a jail); cur == root is never closed here.
	cur := root
	for _, c := range parts {
		if c == "" || c == "." {
			continue
		}
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(cur, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if cur != root {
			unix.Close(cur)
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("%s: %w", c, ErrSymlink)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		cur = next
	}
	if cur != root {
		defer unix.Close(cur)
	}
	return f(cur)
}

// writeFileAt creates the file name (mode perm) in dir, which must not
// exist, and writes data to it.
func writeFileAt(dir int, name, data string, perm uint32) error {
	fd, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for b := []byte(data); len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// pivot makes the mount root the new "/" and detaches the old root, so no
// path to the host filesystem remains (runc's pivot_root(".", ".") way,
// which needs no put_old directory).
func pivot(root int) error {
	oldroot, err := unix.Open("/", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(oldroot)
	if err := unix.Fchdir(root); err != nil {
		return fmt.Errorf("fchdir: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	// The old root is now stacked on top of "/": step onto it and detach
	// it, with everything below it.
	if err := unix.Fchdir(oldroot); err != nil {
		return fmt.Errorf("fchdir old root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("umount old root: %w", err)
	}
	return unix.Chdir("/")
}
