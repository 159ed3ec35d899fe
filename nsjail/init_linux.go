//go:build linux

package nsjail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/rootfs"
	"github.com/airlock-sandbox/airlock/seccomp"
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
// the sandbox from the spec its parent sends and execs the program; it
// never returns, and it is the only place airlock exits a process.
func Init() {
	if !IsInit() {
		return
	}
	// Capabilities, no_new_privs and the exec must all happen on one OS
	// thread: they are per-thread state (capset, prctl), and execve keeps
	// only the calling thread.
	runtime.LockOSThread()
	mark()
	status := os.NewFile(statusFD, "status")
	err := checkBuild(os.Getenv(buildEnv))
	if err == nil {
		err = runInit(status)
	}
	if err == nil {
		err = errors.New("BUG(airlock): init returned without exec")
	}
	reportFailure(status, err)
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

// runInit is the whole privileged sequence, flat, in order. Every step
// either succeeds or aborts the run: nothing here degrades.
//
// Preconditions: runs in the re-exec'd init, on the locked OS thread,
// as root of its new user namespace, before any untrusted code.
func runInit(status *os.File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("BUG(airlock): init panic: %v", r)
		}
	}()
	// The status pipe must close on exec: its EOF tells the parent that
	// the program was exec'd.
	if _, err := unix.FcntlInt(statusFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return stage("status pipe", err)
	}
	spec := os.NewFile(specFD, "spec")
	cfg, err := readConfig(spec)
	if err != nil {
		return stage("read spec", err)
	}
	mark()
	// Before anything else, this thread moves itself into the run's v1
	// cgroup: the jail's mounts and tmpfs pages are charged to it, and the
	// program, which this thread becomes at exec, starts in it. Only this
	// thread moves; the init's other Go threads stay outside and end at
	// exec, which keeps only the calling thread.
	if err := stage("cgroup placement", joinCgroup(cfg.JoinCgroup)); err != nil {
		return err
	}
	mark()
	if !cfg.Process {
		if err := buildJail(cfg); err != nil {
			return err
		}
	}
	mark()
	dropCaps := dropCapabilities
	if cfg.Process {
		dropCaps = clearCapabilities
	}
	// A prepared sandbox of a warm pool is confined before it waits for a
	// request: it is in its cgroup by now (see initConfig.Ahead), so there
	// is nothing to wait for. A cold start is confined only after its
	// program arrives: where the parent places it by pid, it does so
	// meanwhile.
	if cfg.Ahead {
		if err := confine(!cfg.Process, dropCaps); err != nil {
			return err
		}
		if err := loadFilter(cfg.Seccomp); err != nil {
			return err
		}
	}
	// Report the jail built and wait for the program: the parent sends
	// it only once this process is in its cgroup, so no program code
	// ever runs outside it.
	if err := stage("report prepared", writeStatus(status, initStatus{Prepared: true, Marks: takeMarks()})); err != nil {
		return err
	}
	var prog programConfig
	if err := stage("read program", readProgram(spec, &prog)); err != nil {
		return err
	}
	mark()
	if cfg.Seccomp != nil && prog.Seccomp != nil {
		return stage("seccomp", errors.New("BUG(airlock): the filter was sent twice"))
	}
	argv0, err := programSettings(&prog)
	if err != nil {
		return err
	}
	if !cfg.Ahead {
		if err := confine(!cfg.Process, dropCaps); err != nil {
			return err
		}
	}
	mark()
	// The filter of a cold start, or of a prepared sandbox whose filter
	// denies a syscall the init makes before exec (see afterAheadFilter).
	if err := loadFilter(prog.Seccomp); err != nil {
		return err
	}
	mark()
	if err := stage("report ready", writeStatus(status, initStatus{Ready: true, Marks: takeMarks()})); err != nil {
		return err
	}
	// Nothing but exec after this point.
	return stage("exec", unix.Exec(argv0, prog.Args, prog.Env))
}

// marks are the init's timing marks not reported yet (see initMarks).
var marks = make([]int64, 0, 8)

// mark takes the next timing mark: a vDSO clock read, no syscall (0 if
// it failed: a gap, positions kept).
func mark() { marks = append(marks, monotonicNS()) }

func takeMarks() []int64 {
	m := marks
	marks = marks[len(marks):]
	return m
}

// buildJail is the namespaces backend's setup: mounts, root, hostname,
// loopback. The process backend (no namespaces, the host filesystem)
// skips it.
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
	return nil
}

// programSettings applies the program's rlimits and working directory
// and finds its binary. Raising a hard limit would need CAP_SYS_RESOURCE
// in the host's user namespace, which the init never has, so the order
// with the capability drop does not matter. Setting NOFILE explicitly
// also stops the Go runtime from restoring its own soft limit at exec.
func programSettings(cfg *programConfig) (string, error) {
	for _, r := range cfg.Rlimits {
		if err := stage("setrlimit", unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Cur, Max: r.Max})); err != nil {
			return "", err
		}
	}
	// The working directory is set after pivot_root, inside the new root
	// (jail), so it can never point into the host (CVE-2024-21626).
	if err := stage("chdir", unix.Chdir(cfg.Dir)); err != nil {
		return "", err
	}
	argv0, err := lookPath(cfg.Args[0], cfg.Env)
	if err != nil {
		return "", stage("exec", err)
	}
	return argv0, nil
}

// confine is the init's own confinement, in order: cgroup namespace (in
// the jail), fds, capabilities, no_new_privs; loadFilter follows.
// dropCaps empties the capability sets.
func confine(jail bool, dropCaps func() error) error {
	// A cgroup namespace rooted at the cgroup the parent placed us in
	// (final by now), so /proc/self/cgroup shows "/" and no host path.
	// unshare affects only this thread, which is the one that execs.
	if jail {
		if err := stage("unshare cgroup", unix.Unshare(unix.CLONE_NEWCGROUP)); err != nil {
			return err
		}
	}
	// Every fd but stdio closes at exec, whatever leaked into the init
	// from the supervisor (CVE-2024-21626). CLOEXEC, not close: the init
	// still uses its spec pipe and status socket until exec.
	if err := stage("close fds", closeFrom(3)); err != nil {
		return err
	}
	if err := stage("drop capabilities", dropCaps()); err != nil {
		return err
	}
	if err := stage("no_new_privs", unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)); err != nil {
		return err
	}
	if v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || v != 1 {
		return stage("no_new_privs", fmt.Errorf("not set after PR_SET_NO_NEW_PRIVS (%d, %v)", v, err))
	}
	return nil
}

// afterAheadFilter are the syscalls an init confined ahead (a warm
// pool's) makes between loading its filter and exec, with the arguments
// that decide: its own (the status reports, the program part, rlimits,
// chdir, the lookup, exec) and the Go runtime's (threads, memory,
// signals, the scheduler). A pooled filter that denies one of them is
// loaded only once the request arrives, after these steps, as in a cold
// start (Prepare). The list errs on the side of more: a call listed but
// not made only costs that late load.
func afterAheadFilter() []seccomp.Call {
	const atFDCWD = ^uint64(99) // -100
	const goThread = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD
	calls := []seccomp.Call{
		{Name: "write", Args: []uint64{statusFD}}, {Name: "sendmsg", Args: []uint64{statusFD}},
		{Name: "read", Args: []uint64{specFD}}, {Name: "chdir"},
		{Name: "newfstatat", Args: []uint64{atFDCWD, 0, 0, 0}}, {Name: "fstatat", Args: []uint64{atFDCWD, 0, 0, 0}},
		{Name: "execve"},
		{Name: "clone", Args: []uint64{goThread}},
	}
	for r := range uint64(16) { // RLIMIT_CPU .. RLIMIT_RTTIME
		calls = append(calls, seccomp.Call{Name: "prlimit64", Args: []uint64{0, r}})
	}
	for _, name := range []string{"futex", "mmap", "munmap", "madvise", "mprotect", "rt_sigprocmask", "rt_sigaction",
		"sigaltstack", "rt_sigreturn", "gettid", "getpid", "tgkill", "nanosleep", "sched_yield", "exit",
		"epoll_pwait", "epoll_ctl", "fcntl", "close", "getrandom", "sched_getaffinity"} {
		calls = append(calls, seccomp.Call{Name: name})
	}
	return calls
}

// loadFilter loads the program's seccomp filter, if any, and checks that
// it is in force. It comes last, so that it filters the program and as
// little of the setup as can be: after it there is only the ready report
// and exec (and, ahead, the steps afterAheadFilter lists). TSYNC puts it
// on every thread of the init. Its listener (for kill-by-notify) goes to
// the parent; it is close-on-exec here.
func loadFilter(filter *seccomp.Filter) error {
	if filter != nil {
		listener, err := seccomp.Load(filter.Program, filter.Notify)
		if err != nil {
			return stage("seccomp", err)
		}
		if mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil || mode != 2 {
			return stage("seccomp", fmt.Errorf("no filter in force after loading it (mode %d, %v)", mode, err))
		}
		if filter.Notify {
			if err := stage("send listener", sendListener(listener)); err != nil {
				return err
			}
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

// joinCgroup writes "0" to the n tasks files from fd joinCgroupFD on,
// moving the calling thread alone into each v1 hierarchy's run cgroup,
// and closes them: they were opened by the parent, with its credentials.
func joinCgroup(n int) error {
	for fd := joinCgroupFD; fd < joinCgroupFD+n; fd++ {
		_, err := unix.Write(fd, []byte("0"))
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("tasks file %d of %d: %w", fd-joinCgroupFD+1, n, err)
		}
	}
	return nil
}

// maxSpec bounds what the init reads from its parent.
const maxSpec = 64 << 20

func readConfig(r io.Reader) (*initConfig, error) {
	var cfg initConfig
	b, err := readMsg(r, maxSpec)
	if err == nil {
		err = cfg.unmarshal(b)
	}
	if err != nil {
		return nil, fmt.Errorf("parent sent no valid spec (died?): %w", err)
	}
	return &cfg, nil
}

func readProgram(r io.Reader, p *programConfig) error {
	b, err := readMsg(r, maxSpec)
	if err == nil {
		err = p.unmarshal(b)
	}
	if err != nil {
		return fmt.Errorf("parent sent no valid program (died?): %w", err)
	}
	if len(p.Args) == 0 {
		return errors.New("spec has no program")
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
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
}

// closeFrom marks every fd >= first close-on-exec.
func closeFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	// Before 5.11: walk /proc/self/fd (our own procfs by now).
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
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
// checks that they are empty.
func dropCapabilities() error {
	// The bounding set first: dropping from it needs CAP_SETPCAP, which
	// the capset below removes. Every capability the kernel knows is
	// dropped, and any failure aborts (an EINVAL is no "end of list").
	last, err := lastCap()
	if err != nil {
		return err
	}
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
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return verifyNoCapabilities(last)
}

// lastCap is the highest capability the kernel knows.
func lastCap() (int, error) {
	// Read with plain syscalls: the init's first os.File read would set
	// up Go's netpoller (an epoll instance, an eventfd, three more calls),
	// which nothing else in the init needs.
	fd, err := unix.Open("/proc/sys/kernel/cap_last_cap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("cap_last_cap: %w", err)
	}
	var buf [16]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return 0, fmt.Errorf("cap_last_cap: %w", err)
	}
	b := buf[:max(n, 0)]
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || last < 0 || last > 63 {
		return 0, fmt.Errorf("cap_last_cap %q: %v", b, err)
	}
	return last, nil
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
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + file
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
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EACCES
	}
	if st.Mode&0o111 == 0 {
		return unix.EACCES
	}
	return nil
}

// reportFailure sends err to the parent: the stage, the errno and the
// message. Never to stdout/stderr, which belong to the program.
func reportFailure(status *os.File, err error) {
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
		if writeStatus(status, st) == nil {
			return
		}
	}
}

// sendListener passes the seccomp listener fd to the parent.
func sendListener(fd int) error {
	return unix.Sendmsg(statusFD, (&initStatus{Listener: true}).marshal(), unix.UnixRights(fd), nil, 0)
}

func writeStatus(status *os.File, st initStatus) error {
	_, err := status.Write(st.marshal())
	return err
}
