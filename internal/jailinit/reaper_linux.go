//go:build linux

package jailinit

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// The reaper. Without one the program is pid 1 of the sandbox's pid
// namespace, and the kernel drops every signal whose action is the
// default that reaches a pid 1 from inside its namespace (all but
// SIGKILL and SIGSTOP from outside too): such a program survives its own
// kill(getpid(), SIGTERM), and its abort() ends by SIGSEGV. With one, the
// program is pid 1's child, behaves as it does bare, and its own wait
// status is the result.
//
// The reaper is the spawn helper's binary run as "airlock-reaper"
// (cmd/airlock-spawn; Spec.SpawnPath): static C without libc, one thread,
// about ten KiB resident, and an exec of it costs a fraction of a Go
// runtime's start. The supervisor opens it O_PATH and the init inherits
// the fd (initConfig.Reaper). At its last step the init execs the reaper
// where it would exec the program: from its confined thread, with the
// program's filter loaded, its limits set and its working directory, so
// the reaper holds no capability and has no_new_privs and the filter,
// and the program it forks inherits all of it. (The init's other Go
// threads, which still hold the jail's capabilities, end at the exec;
// a Go init that stayed as pid 1 would keep them.) A program whose
// sandbox has no reaper (no SpawnPath) is pid 1, as before; the result's
// Enforced.Pid1 says which.
//
// The filter must allow what the reaper does after it: clone (a plain
// fork), execve, wait4, kill, rt_sigtimedwait, prctl, pipe2 and a few
// more. The default profile and every preset do.
//
// The process backend has no pid namespace to end with its pid 1: its
// reaper (spawn.c's "p" mode) is a child subreaper, so that every orphan
// of the program is its child, reaped by it, and killed by it when the
// program ends, when the supervisor kills the run (ReaperEnd, never
// SIGKILL) and when the supervisor dies (ReaperEnd is its parent-death
// signal): nothing the program started outlives the run. The program
// runs as the reaper's uid, so the reaper must be out of its reach: the
// init builds the Landlock ruleset but does not apply it to itself, and
// the reaper's child applies it just before the program's exec. The
// program's domain is then nested below the reaper's (none), and
// Landlock keeps it from signalling (the signal scope, ABI 6) and from
// tracing the reaper (ptrace, any ABI); the reaper is not dumpable
// either. Without scopes (the host's Landlock below ABI 6) the program
// can stop or kill its reaper, as it can any process of its uid: that is
// the "signal isolation" policy.Check lists.
//
// A warm pool's prepared sandbox may exec its reaper before the request
// (initConfig.ReaperWaits, execWaitingReaper): the reaper then reads the
// program from the spec pipe and sets its rlimits, working directory and
// lookup in the child, under the filter; nsjail.ReaperSyscalls lists
// what it calls, which a pool's filter must allow for that.

// ReaperEnd is the process backend's reaper's end signal (spawn.c's
// SIGEND): its parent-death signal, and the supervisor's kill. It is
// blocked from the init's birth (the supervisor's forking thread blocks
// it) to the reaper's sigtimedwait, so one sent to the Go init is not
// lost (the runtime would ignore it) but waits for the reaper, which then
// kills every process of the run. Never forwarded, never the program's.
const ReaperEnd = unix.Signal(34)

// forwardedSigs are what the reaper passes on to the program's process
// group: what a caller (the supervisor, with kill(2) on the init's host
// pid) or a terminal sends. spawn.c names the same. The init blocks them
// (and SIGCHLD) before it execs the reaper: one sent meanwhile waits.
var forwardedSigs = []unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM,
	unix.SIGTERM, unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGWINCH, unix.SIGCHLD}

// execWaitingReaper execs the reaper from reaperFD with the status
// socket and the spec pipe, on which it waits for its program (see
// initConfig.ReaperWaits); it returns only on failure. No environment:
// the program's comes with it. With recycle, the reaper serves runs until
// its sandbox is discarded, and empties those directories between them;
// with live, it is pid 1 of a sandbox that lives (spawn.c's live mode).
func execWaitingReaper(reaperFD int, recycle []string, live bool) error {
	if reaperFD < 0 {
		return stage("exec reaper", errors.New("a waiting reaper without a reaper"))
	}
	mask, err := blockForwarded()
	if err != nil {
		return stage("exec reaper", err)
	}
	for _, fd := range []int{statusFD, specFD} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return stage("exec reaper", err)
		}
	}
	argv := []string{"airlock-reaper", mask, strconv.Itoa(statusFD), "w", strconv.Itoa(specFD)}
	if recycle != nil {
		argv = append(argv[:3], append([]string{"r", strconv.Itoa(specFD)}, recycle...)...)
	} else if live {
		argv[3] = "l"
	}
	return stage("exec reaper", unix.Exec("/proc/self/fd/"+strconv.Itoa(reaperFD), argv, nil))
}

// blockForwarded blocks the forwarded signals (and SIGCHLD) on this
// thread, which execs the reaper: one sent meanwhile waits for it. It
// returns the mask before, in hex, which the reaper gives the program
// (its first argument): its caller's where the init set it
// (initConfig.SetSignals), else this thread's as the init inherited it.
func blockForwarded() (string, error) {
	var set, old unix.Sigset_t
	for _, s := range forwardedSigs {
		set.Val[(s-1)/64] |= 1 << ((uint(s) - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return "", err
	}
	return strconv.FormatUint(uint64(old.Val[0]), 16), nil
}

// deferredToReaper says whether the program's limit of resource is left
// to the reaper, which sets it in its child just before the program's
// exec (spawn.c's parseMask): the data and address-space limits, which
// bound an exec's image. The embedded reaper's (a cgo binary, whose bss
// holds 32 MiB of Go's heap index) is far larger than a small program's:
// under a small RLIMIT_DATA its exec failed (SIGSEGV) where
// airlock-spawn's ran.
//
// And the CPU-time limit: RLIMIT_CPU counts a process's own CPU time,
// which an exec keeps, so set in the init it would count the init's and
// the reaper's start against pid 1 (under a slow CPU, the cgroup v2
// guest's emulation, a 1 s budget killed pid 1 before the program
// started); set in the reaper's child, it counts the program's alone, as
// a waiting reaper's already does.
func deferredToReaper(resource int) bool {
	return resource == unix.RLIMIT_DATA || resource == unix.RLIMIT_AS || resource == unix.RLIMIT_CPU
}

// execReaper execs the reaper from reaperFD with the status socket; the
// reaper starts the program argv0 (and reports "started", or why not),
// setting the deferred limits in its child first (after the mask, as
// ",RESOURCE:CUR:MAX" in hex). process is the process backend's reaper
// (spawn.c's "p" mode), with the Landlock ruleset llFD (or -1) its child
// applies before the program's exec, and its supervisor's pid, the
// parent it must still have once its own parent-death signal is set. It
// returns only on failure.
func execReaper(argv0 string, prog *programConfig, reaperFD int, deferred []Rlimit, process bool, llFD int) error {
	mask, err := blockForwarded()
	if err != nil {
		return stage("exec reaper", err)
	}
	for _, r := range deferred {
		mask += "," + strconv.FormatUint(uint64(r.Resource), 16) + ":" + strconv.FormatUint(r.Cur, 16) + ":" + strconv.FormatUint(r.Max, 16)
	}
	if _, err := unix.FcntlInt(statusFD, unix.F_SETFD, 0); err != nil {
		return stage("exec reaper", err)
	}
	// Through its fd's /proc link: the file is no path inside the root.
	tty := "0"
	if prog.TTY {
		tty = "1"
	}
	argv := []string{"airlock-reaper", mask, strconv.Itoa(statusFD)}
	if process {
		if llFD >= 0 {
			if _, err := unix.FcntlInt(uintptr(llFD), unix.F_SETFD, 0); err != nil {
				return stage("exec reaper", err)
			}
		}
		argv = append(argv, "p", strconv.Itoa(llFD), strconv.Itoa(unix.Getppid()))
	}
	argv = append(append(argv, tty, argv0), prog.Args...)
	return stage("exec reaper", unix.Exec("/proc/self/fd/"+strconv.Itoa(reaperFD), argv, prog.Env))
}
