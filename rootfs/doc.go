// Package rootfs builds a sandbox's filesystem: a Plan computed in the
// parent as pure data, applied by the init with Apply.
//
// # The default filesystem
//
// Default gives a read-only tmpfs root holding: read-only, recursive,
// nosuid, nodev binds of /usr and the system directories (or their
// merged-/usr symlinks); only /etc/ld.so.cache and /etc/alternatives of the
// host's /etc, plus synthetic passwd, group, hosts, hostname and
// nsswitch.conf; a fresh /proc (nosuid, nodev, noexec) with read-only
// covers over /proc/sys, /proc/irq, /proc/bus, /proc/fs and
// /proc/sysrq-trigger; a minimal /dev (null, zero, full, random, urandom
// bound from the host, fd links, a /dev/shm tmpfs); tmpfs /tmp; and
// /workspace, a tmpfs or a host directory. Every writable tmpfs is bounded
// in bytes and inodes. Nothing else of the host is visible.
//
// # How it is applied
//
// Apply uses the new mount API only: bind sources are cloned with
// open_tree before anything is mounted, attributes (read-only, nosuid,
// nodev, noexec) are set on detached mounts with mount_setattr before
// they are attached, so a read-only bind is read-only recursively from
// its first instant. Mount targets are created one component at a time
// with O_NOFOLLOW and mounts attach to file descriptors, so a symlink
// planted in a writable host directory cannot redirect a mount. The root
// is switched with pivot_root and the old root detached.
//
// # Requirements
//
// Linux 5.12 or newer.
package rootfs
