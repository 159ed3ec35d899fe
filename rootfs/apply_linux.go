//go:build linux

package rootfs

import (
	"errors"
	"fmt"
	"path"
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
		fd, err := cloneSource(op)
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

// cloneSource returns a detached, private, recursive copy of op.Source
// with op's attributes already set, or 0 for a missing optional source.
func cloneSource(op Op) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, op.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if errors.Is(err, unix.ENOENT) && op.Optional {
		return 0, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if op.CharDevice {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			unix.Close(fd)
			return -1, fmt.Errorf("not a character device: %w", unix.EINVAL)
		}
		// A device node is useless on a nodev mount; it gets noexec instead.
		attr = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
	}
	if op.ReadOnly {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if op.NoExec {
		attr |= unix.MOUNT_ATTR_NOEXEC
	}
	if err := setattr(fd, attr); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// setattr sets attr on every mount of the detached tree fd and makes it
// private, so nothing propagates between the sandbox and the host.
func setattr(fd int, attr uint64) error {
	err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: attr, Propagation: unix.MS_PRIVATE})
	if err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
}

func applyOp(root int, op Op, clone int) error {
	rel := strings.TrimPrefix(op.Target, "/")
	switch op.Kind {
	case KindDir:
		fd, err := mkdirAll(root, rel)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case KindSymlink:
		return inParent(root, rel, func(dir int, name string) error {
			return unix.Symlinkat(op.Source, dir, name)
		})
	case KindFile:
		return inParent(root, rel, func(dir int, name string) error {
			return writeFileAt(dir, name, op.Data)
		})
	case KindTmpfs:
		attr := unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
		if op.ReadOnly {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		if op.NoExec {
			attr |= unix.MOUNT_ATTR_NOEXEC
		}
		mfd, err := newFS("tmpfs", op.Options, attr)
		if err != nil {
			return err
		}
		defer unix.Close(mfd)
		return attachDir(root, rel, mfd)
	case KindProc, KindDevpts:
		attr := unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
		if op.Kind == KindProc {
			attr |= unix.MOUNT_ATTR_NODEV
		}
		mfd, err := newFS(string(op.Kind), op.Options, attr)
		if err != nil {
			return err
		}
		defer unix.Close(mfd)
		return attachDir(root, rel, mfd)
	case KindBind:
		if clone == 0 {
			return nil // optional and missing
		}
		var st unix.Stat_t
		if err := unix.Fstat(clone, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return attachDir(root, rel, clone)
		}
		return attachFile(root, rel, clone)
	case KindCover:
		return cover(root, rel, op.Optional, op.KeepDevices)
	case KindMask:
		return mask(root, rel)
	}
	return fmt.Errorf("unknown kind %q", op.Kind)
}

// cover re-binds rel (inside the new root) read-only onto itself, and
// nodev unless keepDevices.
func cover(root int, rel string, optional, keepDevices bool) error {
	fd, err := unix.OpenTree(root, rel, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) && optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(fd)
	attr := uint64(unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC)
	if !keepDevices {
		attr |= unix.MOUNT_ATTR_NODEV
	}
	if err := setattr(fd, attr); err != nil {
		return err
	}
	return moveOnto(root, rel, fd)
}

// mask hides rel (inside the new root) if it exists: a directory under
// a fresh empty read-only tmpfs, anything else under an empty read-only
// file. The file is made in the new root, bound, then unlinked: there is
// no source on any host path to swap (the /dev/null race of
// CVE-2025-31133 cannot happen). (A file of a detached tmpfs would be
// simpler, but kernels before 6.15 refuse to clone from a detached mount.)
func mask(root int, rel string) error {
	var st unix.Stat_t
	err := unix.Fstatat(root, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	ro := unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		mfd, err := newFS("tmpfs", "size=4k,nr_inodes=1,mode=0555", ro)
		if err != nil {
			return err
		}
		defer unix.Close(mfd)
		return attachDir(root, rel, mfd)
	}
	const empty = ".airlock-mask"
	f, err := unix.Openat(root, empty, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("empty file: %w", err)
	}
	unix.Close(f)
	defer unix.Unlinkat(root, empty, 0)
	fd, err := unix.OpenTree(root, empty, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(fd)
	if err := setattr(fd, uint64(ro)); err != nil {
		return err
	}
	return moveOnto(root, rel, fd)
}

// moveOnto attaches the detached mount fd on rel, an existing entry of
// the new root (never following a symlink).
func moveOnto(root int, rel string, fd int) error {
	return inParent(root, rel, func(dir int, name string) error {
		t, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(t)
		return moveMount(fd, t)
	})
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
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return mfd, nil
}

func moveMount(from, to int) error {
	err := unix.MoveMount(from, "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// attachDir creates the directory rel (no symlinks followed) and attaches
// the detached mount mfd on it.
func attachDir(root int, rel string, mfd int) error {
	t, err := mkdirAll(root, rel)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return moveMount(mfd, t)
}

// attachFile creates the regular file rel and attaches mfd on it.
func attachFile(root int, rel string, mfd int) error {
	return inParent(root, rel, func(dir int, name string) error {
		t, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(t)
		var st unix.Stat_t
		if err := unix.Fstat(t, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return ErrSymlink
		}
		return moveMount(mfd, t)
	})
}

// inParent creates the parent directories of rel and calls f with an fd
// of the parent and the last component.
func inParent(root int, rel string, f func(dir int, name string) error) error {
	dir, name := path.Split(rel)
	d, err := mkdirAll(root, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return err
	}
	defer unix.Close(d)
	return f(d, name)
}

// mkdirAll walks rel below root one component at a time, creating missing
// directories (0755) and refusing any symlink, and returns an O_PATH fd of
// the last directory. rel "" returns a duplicate of root.
func mkdirAll(root int, rel string) (int, error) {
	// The walk starts at root itself (not a copy of it: two syscalls per
	// path, some 40 paths a jail); cur == root is never closed here.
	cur := root
	release := func() {
		if cur != root {
			unix.Close(cur)
		}
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			release()
			return -1, fmt.Errorf("%q: %w", rel, unix.EINVAL)
		}
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(cur, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		release()
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("%s: %w", c, ErrSymlink)
		}
		if err != nil {
			return -1, fmt.Errorf("%s: %w", c, err)
		}
		cur = next
	}
	if cur == root {
		// rel names root: the caller gets (and closes) a copy of it.
		return unix.Openat(root, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	return cur, nil
}

func writeFileAt(dir int, name, data string) error {
	fd, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
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
