//go:build linux

package jailinit

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/internal/bpfprog"
	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"github.com/airlock-sandbox/airlock/rootfs"
	"golang.org/x/sys/unix"
)

// IsInit reports whether this process was started as an airlock init.
func IsInit() bool {
	return os.Getenv("_AIRLOCK_INIT") == "1" && len(os.Args) > 0 && os.Args[0] == initArg0
}

// Init is the re-exec hook. Call it first thing in main (and in TestMain)
// of every binary that starts sandboxes:
//
//	func main() {
//		nsjail.Init()
//		...
//	}
//
// In an ordinary process it returns at once. In an airlock init it builds
// the sandbox from the spec its parent sends and execs the program (or
// its reaper, the program its child); it
// never returns, and it is the only place airlock exits a process.
func Init() {
	if !IsInit() {
		return
	}
	// Capabilities, no_new_privs and the exec must all happen on one OS
	// thread: they are per-thread state (capset, prctl), and execve keeps
	// only the calling thread.
	runtime.LockOSThread()
	started := monotonicNS()
	err := checkBuild(os.Getenv(buildEnv))
	if err == nil {
		err = recovered(func() error { return runInit(started) })
	}
	if err == nil {
		err = errors.New("BUG(airlock): init returned without exec")
	}
	reportFailure(err)
	os.Exit(1)
}

// checkBuild refuses a parent built apart from this init (see
// buildToken): its protocol or its jail could differ from ours.
func checkBuild(parent string) error {
	if parent == buildToken {
		return nil
	}
	exe, _ := os.Executable()
	return stage("init binary", fmt.Errorf("the init %s was not built with the airlock that started it (build token %q, the init's %q): build both with scripts/build, or leave the init path unset to re-execute the calling binary", exe, parent, buildToken))
}

// stageError names the step of the init that failed.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

func stage(name string, err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stage: name, err: err}
}

// runInit is the whole privileged sequence, one flat list of steps in
// order, the same for every mode. Each step succeeds or aborts the run
// with its stage named; nothing here degrades. The modes differ in two
// named places only:
//
//   - the process backend (cfg.Process) has no jail: it skips step 3,
//     and confine empties the capability sets it may have instead of
//     dropping all five it holds in its user namespace;
//   - a prepared sandbox (a warm pool's) differs only in when its
//     program arrives: with the request, not right after the spec, so
//     it waits at step 7.
//
// The init never changes its uid or gid: that would clear the
// PR_SET_PDEATHSIG which ties it to its supervisor (set by Go's fork
// after its Credential step, or by the spawn helper after setresuid;
// see spawn.c), and it keeps it across exec.
//
// Preconditions: runs in the re-exec'd init, on the locked OS thread,
// with every capability of its new user namespace, as the program's
// mapped ids (the process backend: as the host
// uid the parent chose), before any untrusted code. The parent has the
// init in the run's cgroup before it sends the spec (born there, or
// placed by pid first) unless the init joins it itself (step 2).
func runInit(started int64) error {
	m := marks{started}
	// 1. The jail to build, every value decided by the parent (the build
	// token was checked before: Init).
	spec := os.NewFile(specFD, "spec")
	cfg := &initConfig{}
	if err := stage("read spec", readSpec(spec, "spec", cfg)); err != nil {
		return err
	}
	m.take()
	// 2. Into the run's v1 cgroups before the jail, so that its mounts
	// and tmpfs pages are charged there. Only this thread moves, the one
	// that forks and execs; the init's other Go threads end at exec. The
	// tasks files are inherited, or (an init started ahead of its
	// cgroup) were sent on the status socket before the spec.
	tasks := inheritedTasks(cfg.JoinCgroup)
	if cfg.SentCgroup > 0 {
		var err error
		if tasks, err = receiveTasks(statusFD, cfg.SentCgroup); err != nil {
			return stage("cgroup placement", err)
		}
	}
	if err := stage("cgroup placement", joinCgroup(tasks)); err != nil {
		return err
	}
	m.take()
	// 3. The jail: mounts, root, hostname, loopback; with net allow,
	// the egress proxy's listener on that loopback, for the parent.
	if !cfg.Process {
		if err := buildJail(cfg); err != nil {
			return err
		}
	}
	m.take()
	// 4. The init confines itself, whatever program comes: cgroup
	// namespace, fds, capabilities, no_new_privs. Nothing after this
	// needs a privilege.
	if err := confine(cfg.Process, cfg.LastCap); err != nil {
		return err
	}
	// 5. Landlock: the program reaches only the files, TCP ports,
	// sockets and processes the ruleset grants (and the reaper, which is
	// no path inside, may be exec'd from its fd). After every mount (a
	// restricted thread cannot mount) and no_new_privs, before the filter
	// (which may deny Landlock's syscalls). It depends on the jail, not on
	// the program, so a warm pool's sandbox has it before its request:
	// what the init still does after it (read its program from the open
	// fd 3, setrlimit, chdir, stat, exec) needs no file access it denies.
	//
	// The process backend's reaper is no exception but the one: it runs
	// outside the program's Landlock domain, so that the program (the
	// same uid) can neither signal nor trace it, and its child applies
	// this ruleset itself, just before the program's exec, under the
	// filter (which must allow landlock_restrict_self: the default
	// profile does; one that denies it fails the run at "landlock").
	// What the init does until it execs the reaper is its own code only.
	llFD := -1
	if cfg.Process && cfg.Reaper {
		var err error
		if llFD, err = landlockRuleset(cfg.Landlock, -1); err != nil {
			return stage("landlock", err)
		}
	} else if err := stage("landlock", applyLandlock(cfg.Landlock, reaperFD(cfg))); err != nil {
		return err
	}
	m.take()
	// 6. Built and confined (Landlock included): a cold parent goes on;
	// a warm pool's sandbox is ready for a request.
	if err := stage("report prepared", writeStatus(initStatus{Prepared: true, Marks: m})); err != nil {
		return err
	}
	m = m[:0]
	// 7. The program: what runs, its limits and its filter. (A reaper
	// that waits gets only the filter here: the request's program goes to
	// the reaper, which does step 8 itself, in the same order.)
	prog, err := readProgram(spec, cfg.ReaperWaits)
	if err := stage("read program", err); err != nil {
		return err
	}
	m.take()
	// The program's timer slack, on the exec thread (it is per thread,
	// and execve keeps the calling thread's): before the filter, which
	// need not allow prctl; after the setup, which ran with the helper's
	// larger one (InitTimerSlack).
	if cfg.TimerSlack != 0 {
		if err := stage("timer slack", unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cfg.TimerSlack), 0, 0, 0)); err != nil {
			return err
		}
	}
	// The program's signal dispositions and mask, its caller's
	// (signals_linux.go): before the filter, which need not allow
	// rt_sigaction or rt_sigprocmask. The mask is this thread's, the one
	// that execs (locked in Init); the reaper passes it on.
	if cfg.SetSignals {
		// The process backend's reaper's end signal stays blocked, and is
		// never ignored (which would discard it): it is the reaper's, not
		// the program's (ReaperEnd).
		ignored, blocked := cfg.SignalsIgnored, cfg.SignalsBlocked
		if cfg.Process && cfg.Reaper {
			ignored &^= 1 << (ReaperEnd - 1)
			blocked |= 1 << (ReaperEnd - 1)
		}
		if err := stage("signal dispositions", setSignals(ignored)); err != nil {
			return err
		}
		if err := stage("signal mask", launchabi.SetBlocked(blocked)); err != nil {
			return err
		}
	}
	if cfg.ReaperWaits {
		listener, err := loadFilter(prog.Seccomp)
		if err != nil {
			return err
		}
		// No marks: they were taken before the request, whose phases
		// count from its start.
		if err := stage("report ready", reportReady(nil, listener)); err != nil {
			return err
		}
		return execWaitingReaper(reaperFD(cfg), cfg.Recycle, cfg.Live)
	}
	// 8. Its rlimits, working directory and binary.
	argv0, deferred, err := programSettings(&prog, cfg.Reaper)
	if err != nil {
		return err
	}
	// 9. The seccomp filter, last, so it filters the program and none of
	// the setup: after it come only the ready report and exec.
	listener, err := loadFilter(prog.Seccomp)
	if err != nil {
		return err
	}
	m.take()
	// 10. Ready, with the filter's listener if it has one; a failure
	// after this is still reported (an exec error).
	if err := stage("report ready", reportReady(m, listener)); err != nil {
		return err
	}
	// 11. Nothing but exec: of the reaper (reaper_linux.go), which stays
	// the sandbox's pid 1 (the process backend's subreaper) and runs the
	// program as its child; without one, of the program.
	if cfg.Reaper {
		return execReaper(argv0, &prog, reaperFD(cfg), deferred, cfg.Process, llFD)
	}
	return stage("exec", unix.Exec(argv0, prog.Args, prog.Env))
}

// reaperFD is the reaper's fd (after the tasks files), or -1 without one.
func reaperFD(cfg *initConfig) int {
	if !cfg.Reaper {
		return -1
	}
	return joinCgroupFD + cfg.JoinCgroup
}

// readProgram reads the program's part of the spec (fd 3's second
// message): with filterOnly (ReaperWaits), just the filter.
func readProgram(spec io.Reader, filterOnly bool) (programConfig, error) {
	var prog programConfig
	err := readSpec(spec, "program", &prog)
	switch {
	case err != nil:
	case filterOnly && (len(prog.Args) > 0 || len(prog.Env) > 0 || prog.Dir != "" || len(prog.Rlimits) > 0 || prog.TTY):
		err = errors.New("a waiting reaper's spec carries a program")
	case !filterOnly && len(prog.Args) == 0:
		err = errors.New("spec has no program")
	}
	return prog, err
}

// recovered runs f, and turns a panic into an error for the parent.
func recovered(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("BUG(airlock): init panic: %v", r)
		}
	}()
	return f()
}

// marks are the init's timing marks since its last report, in the order
// initMarks names them: vDSO clock reads, no syscall (0 if one failed:
// a gap, positions kept).
type marks []int64

func (m *marks) take() { *m = append(*m, monotonicNS()) }

// buildJail is the namespaces backend's setup: mounts, root, hostname,
// loopback, and with net allow the egress proxy's listener on it.
func buildJail(cfg *initConfig) error {
	// clone(CLONE_NEWNS) copied the host's propagation: make every mount
	// private before mounting anything, so nothing leaks to the host.
	if err := stage("make mounts private", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")); err != nil {
		return err
	}
	// No nested user namespaces: they are the gate to most kernel attack
	// surface (nft, fsconfig, ...). This writes our own userns's limit,
	// through the host /proc that is still mounted; it must precede the
	// read-only cover of /proc/sys made by the rootfs plan.
	if err := stage("limit user namespaces", writeFile("/proc/sys/user/max_user_namespaces", "0")); err != nil {
		return err
	}
	// Build the root and pivot into it; the host tree is detached after.
	if err := stage("rootfs", rootfs.Apply(cfg.Plan, cfg.Staging)); err != nil {
		return err
	}
	if err := stage("sethostname", unix.Sethostname([]byte(cfg.Hostname))); err != nil {
		return err
	}
	if cfg.NetNS {
		if err := stage("loopback up", loopbackUp()); err != nil {
			return err
		}
	}
	return stage("egress listener", sendEgressListener(cfg.EgressPort))
}

// confine is the init's own confinement, in order: cgroup namespace (in
// the jail), fds, capabilities (0 to last), no_new_privs. The process
// backend has no namespaces: it takes a session keyring of its own, and
// drops every capability it may have: the bounding set too where it holds
// CAP_SETPCAP (started by root, which gives it that one: see nsjail's
// command), else it empties the other sets (processCapabilities).
func confine(process bool, last int) error {
	drop := func() error { return processCapabilities(last) }
	if process {
		// A session keyring of its own, anonymous: the caller's (and the
		// keys in it) are no longer the program's to possess or read. (The
		// jail's user namespace hides the caller's keys.) Before the
		// filter, which denies keyctl.
		if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
			return stage("session keyring", errno)
		}
	} else {
		// A cgroup namespace rooted at the run's cgroup (final by now: see
		// runInit), so /proc/self/cgroup shows "/" and no host path.
		// unshare affects only this thread, which is the one that execs.
		if err := stage("unshare cgroup", unix.Unshare(unix.CLONE_NEWCGROUP)); err != nil {
			return err
		}
		drop = func() error { return dropCapabilities(last) }
	}
	// Every fd but stdio closes at exec, whatever leaked into the init
	// from the supervisor (CVE-2024-21626). CLOEXEC, not close: the init
	// still uses its spec pipe and status socket until exec. The status
	// socket's close at exec is the protocol's: its EOF after "ready"
	// tells the parent the program was exec'd (a reaper keeps it:
	// execReaper, and reports "started" itself).
	if err := stage("close fds", unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)); err != nil {
		return err
	}
	// Capabilities before no_new_privs and the filter: a filter may deny
	// the prctl and capset calls the drop makes.
	if err := stage("drop capabilities", drop()); err != nil {
		return err
	}
	// no_new_privs: no exec can grant privileges back (setuid bits, file
	// capabilities), and without CAP_SYS_ADMIN a filter loads only with it.
	if err := stage("no_new_privs", unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)); err != nil {
		return err
	}
	if v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || v != 1 {
		return stage("no_new_privs", fmt.Errorf("not set after PR_SET_NO_NEW_PRIVS (%d, %v)", v, err))
	}
	return nil
}

// programSettings applies the program's rlimits and working directory
// and finds its binary. Raising a hard limit would need CAP_SYS_RESOURCE
// in the host's user namespace, which the init never has, so the order
// with the capability drop does not matter. Setting NOFILE explicitly
// also stops the Go runtime from restoring its own soft limit at exec.
// With a reaper, those that bound an exec's image (deferredToReaper) are
// returned instead: the reaper sets them in its child.
func programSettings(cfg *programConfig, reaper bool) (string, []Rlimit, error) {
	var deferred []Rlimit
	for _, r := range cfg.Rlimits {
		if reaper && deferredToReaper(r.Resource) {
			// One each: a later one replaces it, as a later setrlimit would.
			deferred = append(slices.DeleteFunc(deferred, func(d Rlimit) bool { return d.Resource == r.Resource }), r)
			continue
		}
		if err := stage("setrlimit", unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Cur, Max: r.Max})); err != nil {
			return "", nil, err
		}
	}
	// The working directory is set after pivot_root, inside the new root
	// (jail), so it can never point into the host (CVE-2024-21626).
	if err := stage("chdir", unix.Chdir(cfg.Dir)); err != nil {
		return "", nil, err
	}
	argv0, err := lookPath(cfg.Args[0], cfg.Env)
	if err != nil {
		return "", nil, stage("exec", err)
	}
	return argv0, deferred, nil
}

// loadFilter loads the program's seccomp filter, if any, and checks that
// it is in force. TSYNC puts it on every thread of the init. It returns
// the filter's listener (for kill-by-notify, close-on-exec), or -1.
func loadFilter(filter *bpfprog.Filter) (int, error) {
	if filter == nil {
		return -1, nil
	}
	listener, err := bpfprog.Load(filter.Program, filter.Notify)
	if err != nil {
		return -1, stage("seccomp", err)
	}
	if mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil || mode != 2 {
		return -1, stage("seccomp", fmt.Errorf("no filter in force after loading it (mode %d, %v)", mode, err))
	}
	return listener, nil // -1 without Notify
}

// processCapabilities is the process backend's capability drop. An init
// that holds CAP_SETPCAP (a root caller gave it that one, as an ambient
// capability across its uid change) drops all five sets, the bounding set
// included, as the jail's does; one that does not (rootless) cannot
// shrink its bounding set: it empties the others (the ambient set with
// the permitted one) and checks that they are empty. The result's
// enforced.capabilities says which (nsjail's processCapabilities).
func processCapabilities(last int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[unix.CAP_SETPCAP/32].Effective&(1<<(unix.CAP_SETPCAP%32)) != 0 {
		return dropCapabilities(last)
	}
	if err := clearCapabilities(); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Errorf("capabilities left after capset: %+v", data)
		}
	}
	for c := 0; c <= last; c++ {
		if amb, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err != nil || amb != 0 {
			return fmt.Errorf("capability %d left in the ambient set (%v)", c, err)
		}
	}
	return nil
}

// clearCapabilities empties the effective, permitted and inheritable
// sets. An unprivileged process cannot shrink its bounding set (that
// needs CAP_SETPCAP); no_new_privs keeps setuid and file-capability
// binaries from granting anything.
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// inheritedTasks are the n tasks files inherited from fd joinCgroupFD on.
func inheritedTasks(n int) []int {
	fds := make([]int, n)
	for i := range fds {
		fds[i] = joinCgroupFD + i
	}
	return fds
}

// receiveTasks reads the n tasks files the parent sent on the status
// socket sock: one message, one byte and exactly n descriptors. Anything
// else is refused, with every descriptor received closed.
func receiveTasks(sock, n int) ([]int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*n))
	got, oobn, flags, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receiving the tasks files: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if r, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, r...)
			}
		}
	}
	if got != 1 || len(fds) != n || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receiving the tasks files: %d of %d, in a message of %d bytes", len(fds), n, got)
	}
	return fds, nil
}

// joinCgroup writes "0" to each tasks file, moving the calling thread
// alone into each v1 hierarchy's run cgroup, and closes them: they were
// opened by the parent, with its credentials.
func joinCgroup(fds []int) error {
	var first error
	for i, fd := range fds {
		_, err := unix.Write(fd, []byte("0"))
		unix.Close(fd)
		if err != nil && first == nil {
			first = fmt.Errorf("tasks file %d of %d: %w", i+1, len(fds), err)
		}
	}
	return first
}

// maxSpec bounds what the init reads from its parent.
const maxSpec = 64 << 20

// readSpec reads the parent's next message (what: "spec" or "program")
// into m.
func readSpec(r io.Reader, what string, m interface{ unmarshal([]byte) error }) error {
	b, err := readMsg(r, maxSpec)
	if err == nil {
		err = m.unmarshal(b)
	}
	if err != nil {
		return fmt.Errorf("parent sent no valid %s (died?): %w", what, err)
	}
	return nil
}

func writeFile(path, data string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(data))
	return err
}

// loopbackUp brings lo up in the sandbox's network namespace with one
// ioctl (no netlink dependency).
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, _ := unix.NewIfreq("lo") // fails only for a name too long
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
}

// Securebits that keep uid 0 from ever regaining capabilities at exec.
const (
	secbitNoroot              = 1 << 0
	secbitNorootLocked        = 1 << 1
	secbitNoSetuidFixup       = 1 << 2
	secbitNoSetuidFixupLocked = 1 << 3
	secbitKeepCapsLocked      = 1 << 5
)

// dropCapabilities empties all five capability sets of this thread (and so
// of the program it execs) and locks uid 0 out of regaining any; then it
// checks that they are empty. last is the kernel's highest capability,
// as the parent read it (cap_last_cap); the check fails unless the
// kernel agrees.
func dropCapabilities(last int) error {
	// The bounding set first: dropping from it needs CAP_SETPCAP, which
	// the capset below removes. Every capability the kernel knows is
	// dropped, and any failure aborts (an EINVAL is no "end of list").
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient: %w", err)
	}
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked | secbitKeepCapsLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	if err := clearCapabilities(); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return verifyNoCapabilities(last)
}

// verifyNoCapabilities reads back what dropCapabilities set: no syscall
// that reported success may have left a capability behind.
func verifyNoCapabilities(last int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Errorf("capabilities left after capset: %+v", data)
		}
	}
	for c := 0; c <= last; c++ {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		if err != nil || in != 0 {
			return fmt.Errorf("capability %d left in the bounding set (%v)", c, err)
		}
		amb, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0)
		if err != nil || amb != 0 {
			return fmt.Errorf("capability %d left in the ambient set (%v)", c, err)
		}
	}
	// Dropped were all there are: the kernel knows no capability last+1.
	if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(last+1), 0, 0, 0); last < 0 || !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("capability %d is not the kernel's last (%v)", last, err)
	}
	return nil
}

// lookPath finds file in the PATH of env, inside the new root.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		return file, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		p := cmp.Or(dir, ".") + "/" + file // "" is the working directory
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", file, unix.ENOENT)
}

func executable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Mode&0o111 == 0 {
		return unix.EACCES
	}
	return nil
}

// reportFailure sends err to the parent: the stage, the errno and the
// message. Never to stdout/stderr, which belong to the program.
func reportFailure(err error) {
	st := initStatus{Stage: "init", Msg: err.Error()}
	var se *stageError
	if errors.As(err, &se) {
		st.Stage, st.Msg = se.stage, se.err.Error()
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		st.Errno = int(errno)
	}
	// Retried: a report lost after "ready" would make the init's exit
	// look like the program's. Only a parent that is gone (EPIPE for
	// good) loses it, and then nobody is waiting for it.
	for range 3 {
		if writeStatus(st) == nil {
			return
		}
	}
}

// reportReady sends "ready" and the marks, and the seccomp listener
// (SCM_RIGHTS) unless it is -1: one message, one wakeup of the parent.
func reportReady(marks []int64, listener int) error {
	var rights []byte
	if listener >= 0 {
		rights = unix.UnixRights(listener)
	}
	return unix.Sendmsg(statusFD, (&initStatus{Ready: true, Listener: listener >= 0, Marks: marks}).marshal(), rights, nil, 0)
}

// writeStatus sends st on the status socket (one packet).
func writeStatus(st initStatus) error {
	_, err := unix.Write(statusFD, st.marshal())
	return err
}

// monotonicNS is CLOCK_MONOTONIC in ns (a vDSO read): the clock of the
// init's marks, which the parent reads too (MonotonicNS).
func monotonicNS() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
