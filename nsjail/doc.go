// Package nsjail is airlock's own jail, not Google's nsjail tool (the name
// is the directory the project's layout fixes): the supervisor that
// starts a sandbox in new namespaces and the re-exec'd init that builds it.
//
// # Shape
//
// Start re-executes the current binary (/proc/self/exe) as the init, with
// new user, pid, mount, ipc, uts and (unless HostNetwork) net namespaces
// given by clone flags, so every thread of the init is born inside them.
// The fully resolved Spec travels over an inherited pipe; the init obeys
// it, in one flat sequence (internal/jailinit: runInit): v1 cgroup join,
// private mounts, no nested user namespaces, the rootfs plan and
// pivot_root, hostname, loopback up; cgroup namespace, close-on-exec on
// every fd >= 3, all capabilities dropped, no_new_privs; then the
// program: rlimits, chdir, the seccomp filter, exec. A warm pool's
// prepared sandbox runs the same sequence and waits before the program.
// Setup failures come back typed over a close-on-exec status pipe, whose
// EOF after "ready" means the program was exec'd. See internal/jailinit/protocol.go.
//
// # The re-exec hook
//
// Every binary that starts sandboxes must call Init first thing in main
// (and in TestMain); it returns at once in an ordinary process.
//
// With Spec.SpawnPath (and an InitPath), the supervisor does not fork
// itself: Go vforks the spawn helper (cmd/airlock-spawn, static C), which
// clones the init with those namespaces, writes its id maps, reports its
// pid and a pidfd once it was exec'd (spawn_linux.go), waits for it and
// ends as it ended. A fork of a Go supervisor copies its page tables and
// makes it take copy-on-write faults: a cost that grows with its memory.
//
// # Supervision
//
// The init (or its helper) is started from a goroutine locked to its OS
// thread, with Pdeathsig SIGKILL: the sandbox dies when its supervisor
// dies (a helper's init dies with the helper). The
// supervisor kills the sandbox through a pidfd at the wall-clock timeout,
// when a captured stream passes its cap, or when the context ends; killing
// the sandbox's pid 1 takes the whole pid namespace with it. Wait returns
// one Result: status, exit code or signal, captured output, wall and CPU
// time, peak RSS, and what was enforced.
//
// # Identity
//
// The program runs as Spec.UID and Spec.GID (the executor's default:
// 1000, "sandbox") of its own user namespace, which maps those ids only,
// with no capabilities. Rootless, they map to the caller's ids; under
// real root to an unprivileged host id (65534 unless Spec.HostUID says
// otherwise), never to host root.
//
// # Process tree
//
// With Spec.SpawnPath, pid 1 of the sandbox is a reaper and the program
// its child, so signals it sends itself and its wait status are as bare
// (internal/jailinit/reaper_linux.go); without, the program is pid 1.
//
// # Process backend
//
// Spec.Process runs the program without namespaces or root filesystem:
// the init then only sets close-on-exec fds, an empty capability set,
// no_new_privs, rlimits, the working directory and the seccomp filter,
// and the supervisor kills the program's process group: at a kill, and
// when the program ends, before it is reaped (its zombie holds the
// group's id, so the kill cannot reach a process that reused it). It is
// the weaker backend for hosts without user namespaces.
//
// # Requirements
//
// Linux 5.12 or newer (mount_setattr and the new mount API), user
// namespaces enabled for the caller. Without them Start fails with an
// error matching policy.ErrUnsupported; nothing runs unconfined.
package nsjail
