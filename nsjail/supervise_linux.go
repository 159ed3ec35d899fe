//go:build linux

package nsjail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/internal/jailinit"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// This file is the supervisor's half after the init was started: the
// status protocol, the watchers that kill (timeout, CPU budget, context,
// seccomp notifications), and the classification of the outcome.
// watch enforces the wall-clock timeout, ctx cancellation and, with a
// cgroup, the CPU-time budget on the total of every task (RLIMIT_CPU only
// sees one process at a time).
func (s *Sandbox) watch(ctx context.Context) {
	var timeout, cpuTick <-chan time.Time
	if s.spec.Timeout > 0 {
		t := time.NewTimer(s.spec.Timeout - time.Since(s.runStart))
		defer t.Stop()
		timeout = t.C
	}
	if s.spec.CPUTime > 0 && s.spec.Cgroup != nil {
		t := time.NewTicker(cpuPoll)
		defer t.Stop()
		cpuTick = t.C
	}
	// Signals are forwarded once the program runs: before, pid 1 is the
	// init, which a signal would end (or confuse) mid-setup.
	var sigs <-chan os.Signal
	execd := s.execd
	cpuBase := s.cpuBase
	for {
		select {
		case <-s.exited:
			return
		case <-execd:
			sigs, execd = s.spec.Signals, nil
			// The CPU-time budget is the program's: what a cold
			// sandbox's setup took (the init, the reaper's start) is left
			// out, as a prepared sandbox's is (cpuBase).
			if cpuTick != nil && cpuBase == 0 {
				if st, err := s.spec.Cgroup.Stats(); err == nil {
					cpuBase = st.CPU
				}
			}
		case sig := <-sigs:
			if err := s.Signal(sig); err != nil {
				s.log.Debug("forwarding a signal", slog.String("signal", sig.String()), slog.Any("error", err))
			}
		case <-timeout:
			s.kill(StatusTimeout)
			return
		case <-cpuTick:
			if execd != nil {
				continue // the program has not started: nothing of its budget is used
			}
			if st, err := s.spec.Cgroup.Stats(); err == nil && st.CPU-cpuBase >= s.spec.CPUTime {
				s.kill(StatusCPULimit)
				return
			}
		case <-ctx.Done():
			s.cancelled(ctx)
			return
		}
	}
}

// Signal delivers sig to the sandbox's pid 1 (the program, or the reaper
// that passes it on to the program), through its pidfd when there is one,
// so never to a recycled pid. A pid-1 program receives only the signals
// it has a handler for (SIGKILL and SIGSTOP aside), as any pid
// namespace's init. Signalling a sandbox that has ended does nothing.
func (s *Sandbox) Signal(sig os.Signal) error {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return policy.Invalid("signal", "%v is not a syscall.Signal", sig)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		return nil
	default:
	}
	if s.rec != nil && s.rec.over {
		return nil // a recycled run's program ended: the sandbox is no longer its
	}
	var err error
	if s.pidfd >= 0 {
		err = unix.PidfdSendSignal(s.pidfd, ss, nil, 0)
	} else {
		err = s.cmd.Process.Signal(ss)
	}
	if errors.Is(err, unix.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// endGroup waits until the process backend's program, the leader of its
// process group, has exited, without reaping it, and kills what it left
// running in its group, as the pid namespace takes everything with pid 1.
// Only then may the leader be reaped. A zombie keeps its pid, so until
// it is reaped no new process can get that pid and with it the group's
// id; a kill(-pgid) after the reap could reach a stranger that reused
// both, once the group was empty. kill makes no group kill after this.
func (s *Sandbox) endGroup() {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	// Whatever waitid said (only EINTR is possible for our own unreaped
	// child), the group's id is still held: killing it is safe.
	s.mu.Lock()
	defer s.mu.Unlock()
	unix.Kill(-s.pid, unix.SIGKILL)
	s.groupDone = true
}

// reaperEndGrace is how long the process backend's reaper has to end
// after its end signal before it is killed (kill).
const reaperEndGrace = 5 * time.Second

// cpuPoll is how often the cgroup's CPU time is checked against CPUTime.
const cpuPoll = 50 * time.Millisecond

// awaitExec reads the init's status socket until the program started:
// the reaper's "started", or EOF after "ready" (an exec).
func (s *Sandbox) awaitExec(statusR *os.File) error { return s.awaitStatus(statusR, false) }

// awaitPrepared reads the init's status socket until a prepared sandbox
// reports its jail built.
func (s *Sandbox) awaitPrepared(statusR *os.File) error { return s.awaitStatus(statusR, true) }

// statusBufs holds the buffers reports are received into. A report is a
// few hundred bytes at most, but a packet longer than its buffer would
// be cut, so they are 64 KiB; pooled, because two fresh ones a run were
// half of what a daemon's run allocated, and of its GC work.
var statusBufs = sync.Pool{New: func() any { return new([64 << 10]byte) }}

func (s *Sandbox) awaitStatus(statusR *os.File, untilPrepared bool) error {
	ready, spoke := s.readyAhead, false
	pooled := statusBufs.Get().(*[64 << 10]byte)
	defer statusBufs.Put(pooled) // unmarshal copies what it keeps
	buf, oob := pooled[:], make([]byte, unix.CmsgSpace(4))
	// Through the poller where statusR is non-blocking (socketPair):
	// the wait parks this goroutine and frees its P.
	rc, err := statusR.SyscallConn()
	if err != nil {
		return &policy.SetupError{Stage: "status", Err: err}
	}
	for {
		var n, oobn int
		var err error
		if rerr := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, err = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			return !errors.Is(err, unix.EAGAIN)
		}); rerr != nil {
			err = rerr
		}
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNRESET) {
			// ECONNRESET: the init ended with a message of ours unread
			// (an init launched ahead that failed before it received its
			// cgroup's tasks files). The kernel reports that before the
			// packets the init sent, and clears it: the next read gets
			// them (its failure report) or the EOF.
			continue
		}
		if err != nil || n == 0 {
			break // EOF: exec'd, or the init died
		}
		spoke = true
		var st initStatus
		if err := st.Unmarshal(buf[:n]); err != nil {
			return &policy.SetupError{Stage: "status", Err: fmt.Errorf("bad message from init: %w", err)}
		}
		s.initPhases(st.Marks)
		if st.Egress {
			fd, err := listenerFD(oob[:oobn])
			if err == nil {
				err = s.keepEgressListener(fd)
			}
			if err != nil {
				return &policy.SetupError{Stage: "egress listener", Err: err}
			}
			continue
		}
		if st.Listener && !st.Ready {
			return &policy.SetupError{Stage: "status", Err: errors.New("bad message from init: a listener without ready")}
		}
		if st.Listener {
			fd, err := listenerFD(oob[:oobn])
			if err != nil {
				return &policy.SetupError{Stage: "seccomp listener", Err: err}
			}
			go s.watchNotify(fd)
		}
		if st.Ready {
			ready = true
			continue
		}
		if st.Started && ready {
			return nil
		}
		if st.Prepared && untilPrepared {
			return nil
		}
		if st.Msg == "" && st.Errno != 0 {
			// The waiting reaper names no errno (no libc): we do.
			st.Msg = syscall.Errno(st.Errno).Error()
		}
		return &policy.SetupError{Stage: st.Stage, Err: s.initFailure(st)}
	}
	// EOF. After "ready" it means exec'd, but a reaper reports "started"
	// (or why not): its silence is its death, never the program's start.
	if !ready || s.reaper {
		<-s.exited
		switch s.killReason() {
		case StatusTimeout:
			return &policy.SetupError{Stage: "init", Err: errSetupTimeout}
		case StatusSeccompViolation, StatusOutputLimit, reasonCancelled:
			if ready {
				// Killed for a filtered call, for output or by the
				// caller's context, before the reaper's "started" went
				// out (the program may have run and printed by then):
				// Wait says which, with what it printed.
				return nil
			}
			if s.killReason() == reasonCancelled {
				return fmt.Errorf("nsjail: run cancelled during setup: %w", s.cancelErr())
			}
		}
		if ready {
			return &policy.SetupError{Stage: "reaper", Err: fmt.Errorf("pid 1 ended before it started the program: %v", s.cmd.ProcessState)}
		}
		if !spoke && s.spec.InitPath == "" && s.cmd.ProcessState != nil && s.cmd.ProcessState.Exited() {
			// This binary, re-executed as the init, ran as itself: an
			// init reports why it fails before it exits.
			return &policy.SetupError{Stage: "init", Err: fmt.Errorf("init died during setup: %v, without a word of the init protocol: %w", s.cmd.ProcessState, errNotAnInit)}
		}
		return &policy.SetupError{Stage: "init", Err: fmt.Errorf("init died during setup: %v", s.cmd.ProcessState)}
	}
	return nil
}

// errNotAnInit: this binary, re-executed as the init, ran as itself.
var errNotAnInit = errors.New("this binary, re-executed as the sandbox's init (no InitPath), did not act as one; call nsjail.Init() first thing in its main (and in TestMain)")

// initFailure is the error of a failed step the init reported, typed
// where the step says whose fault it is: the program's exec (a
// ProgramError: not found, or not executable) and the working directory
// (the request's chdir) are the request's; the rest are setup faults,
// classified by their errno (policy.SetupError).
func (s *Sandbox) initFailure(st initStatus) error {
	errno := syscall.Errno(st.Errno)
	switch {
	case st.Stage == "exec" && errno != 0 && len(s.spec.Args) > 0:
		switch errno {
		case syscall.ENOENT, syscall.ENOTDIR, syscall.EACCES, syscall.ENOEXEC, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG:
			return &ProgramError{Program: s.spec.Args[0], Errno: errno}
		}
	case st.Stage == "setrlimit" && errno == syscall.EPERM:
		// Raising a hard limit needs privilege: the program's rlimits are
		// above the ones the supervisor was started with.
		return &policy.UnsupportedError{Control: "rlimits", Reason: "the program's rlimits (open_files, file_size, ...) are above the hard limits airlock was started with, which only a privileged process can raise (" + st.Msg + ")",
			Fix: "raise the hard limits of the process that starts airlock (ulimit -H -n, -f), or lower open_files and file_size in the policy"}
	case st.Stage == "chdir" && (errno == syscall.ENOENT || errno == syscall.ENOTDIR || errno == syscall.EACCES):
		dir := or(s.spec.Dir, "/workspace")
		return &fieldError{field: "chdir", errno: errno,
			msg: fmt.Sprintf("%s: %s (the working directory must exist inside the sandbox: a path of its filesystem, /workspace or below, or a mount's target)", dir, st.Msg)}
	}
	return &initError{msg: st.Msg, errno: errno}
}

// watchNotify kills the sandbox when its seccomp filter reports a kill
// rule's syscall (SECCOMP_RET_USER_NOTIF), and records the syscall. The
// notifying task stays blocked in the syscall until the kill.
func (s *Sandbox) watchNotify(fd int) {
	wait, done := notifyWaiter(fd, s.exited)
	defer done()
	for {
		// The listener reports POLLHUP once no task uses the filter; the
		// wait also ends once the run is reaped while tasks that left it
		// still hold the filter (the process backend's setsid'd
		// escapees).
		revents, err := wait()
		select {
		case <-s.exited:
			return
		default:
		}
		if err != nil || revents&unix.POLLIN == 0 {
			if revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			continue
		}
		nr, arch, err := seccomp.ReceiveNotification(fd)
		if err != nil {
			continue // e.g. ENOENT: the task died before we read it
		}
		s.mu.Lock()
		if s.violation == "" {
			s.violation = seccomp.NotifiedName(nr, arch)
		}
		s.mu.Unlock()
		s.kill(StatusSeccompViolation)
		// The listener stays open until the sandbox is gone: closing it
		// would let the call return (ENOSYS) while pid 1's death is
		// still on its way to the program.
		<-s.exited
		return
	}
}

// notifyWaiter returns how watchNotify waits on the listener fd: wait
// returns its poll events once any is there, or once exited is closed;
// done closes fd. It waits in the runtime's poller: a poll(2) that
// blocks keeps the goroutine's P for as long as it waits, and with the
// CLI's one P nothing else runs until sysmon retakes it (a run's spec
// waited 1.03 ms so, Go's execution trace, 2026-11-28). Where the poller
// cannot take the fd, it polls in one-second waits, blocking.
func notifyWaiter(fd int, exited <-chan struct{}) (wait func() (int16, error), done func()) {
	poll := func(timeout int) (int16, error) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, err := unix.Poll(fds, timeout)
		return fds[0].Revents, err
	}
	blocking := func() (int16, error) { return poll(1000) }
	if unix.SetNonblock(fd, true) == nil {
		f := os.NewFile(uintptr(fd), "seccomp-listener")
		rc, err := f.SyscallConn()
		// A deadline can be set only on a file in the poller.
		if err == nil && f.SetReadDeadline(time.Time{}) == nil {
			go func() {
				<-exited
				f.SetReadDeadline(time.Unix(1, 0)) // wakes the wait below
			}()
			wait = func() (revents int16, err error) {
				rerr := rc.Read(func(uintptr) bool {
					revents, err = poll(0)
					return err != unix.EINTR && (err != nil || revents != 0)
				})
				if rerr != nil {
					return 0, rerr
				}
				return revents, err
			}
			return wait, func() { f.Close() }
		}
		// Not in the poller: f only wraps fd, which the blocking waits
		// below use; done closes it through f.
		return blocking, func() { f.Close() }
	}
	return blocking, func() { unix.Close(fd) }
}

// Pid returns the host pid of the sandbox's init (its pid 1).
func (s *Sandbox) Pid() int { return s.pid }

// Kill kills the sandbox and everything in it: SIGKILL to its pid 1 takes
// the whole pid namespace down, double-forked and setsid'd processes
// included. It is delivered through a pidfd, never to a recycled pid.
func (s *Sandbox) Kill() error { return s.kill(StatusSignaled) }

func (s *Sandbox) kill(reason Status) error {
	// Reasons are recorded under the lock Wait reads them with. An output
	// overflow or a seccomp violation happened whether or not the program
	// is still there to kill; a timeout, a cancellation or Kill is the
	// cause only if the signal found the process (a program that ended on
	// its own just before a late timer was not killed).
	s.mu.Lock()
	defer s.mu.Unlock()
	if (reason == StatusOutputLimit || reason == StatusSeccompViolation) && s.reason == "" {
		s.reason = reason
	}
	if s.rec != nil && s.rec.over {
		// A recycled run whose program ended: the sandbox is being reset
		// or serves another run. (An overflow found in the output it left
		// is still its cause, above, as for a cold run.)
		return nil
	}
	if s.spec.Process && s.reaper {
		// The process backend's reaper kills every process of the run
		// on its end signal, then reports and exits; a SIGKILL would leave
		// them to the host's init. Sent to the Go init still in setup, it
		// waits, blocked, for the reaper (jailinit.ReaperEnd).
		err := s.cmd.Process.Signal(jailinit.ReaperEnd)
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		if s.reason == "" {
			s.reason = reason
		}
		if !s.endSent {
			// A reaper that does not end (one its program stopped, where
			// Landlock has no signal scope) is killed after a grace: the
			// run ends, though what it left may then outlive it (listed,
			// "signal isolation").
			s.endSent = true
			time.AfterFunc(reaperEndGrace, func() {
				select {
				case <-s.exited:
				default:
					s.cmd.Process.Kill()
				}
			})
		}
		return err
	}
	if s.spec.Process && !s.groupDone {
		// The process backend's tree is its process group (the leader's
		// pid); a process that left it with setsid escapes unless a
		// cgroup holds the run. Safe from pid reuse: until groupDone the
		// leader is not reaped, so its pid is still its group's id (see
		// endGroup). When the group kill found the leader, the reaper may
		// take it before the pidfd kill below sees it: the cause is
		// recorded here.
		if unix.Kill(-s.pid, unix.SIGKILL) == nil && s.reason == "" {
			s.reason = reason
		}
	}
	var err error
	if s.pidfd >= 0 {
		// The init, not its spawn helper: the helper then ends as it did.
		if err = unix.PidfdSendSignal(s.pidfd, unix.SIGKILL, nil, 0); errors.Is(err, unix.ESRCH) {
			return nil
		}
	} else if err = s.cmd.Process.Kill(); errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	if s.reason == "" {
		s.reason = reason
	}
	return err
}

func (s *Sandbox) cancelErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancel
}

func (s *Sandbox) killReason() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Wait waits for the sandbox's program to end and returns its Result.
func (s *Sandbox) Wait() (*Result, error) {
	if s.rec != nil {
		return s.waitRecycled()
	}
	<-s.exited
	wall := time.Since(s.runStart)
	s.phase("exited")
	// The program's connections end with it (the pid namespace took
	// every process): the log is final.
	network, dropped := s.closeEgress()
	s.mu.Lock()
	cancelled, reason, violation := s.cancel, s.reason, s.violation
	s.mu.Unlock()
	st := s.cmd.ProcessState
	if st == nil {
		return nil, &policy.SetupError{Stage: "wait", Err: s.waitErr}
	}
	res := &Result{WallTimeMS: wall.Milliseconds(), Enforced: s.enforced, Network: network, NetworkDropped: dropped}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		res.CPUTimeMS = (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Milliseconds()
		res.MemoryPeakBytes = ru.Maxrss * 1024
	}
	ws := st.Sys().(syscall.WaitStatus)
	if pws, ok, err := s.programStatus(); err != nil {
		return nil, err
	} else if ok {
		ws = pws
	}
	// Whatever pid 1's fate, kill what may be left in the cgroup
	// (nothing, after the pid namespace is gone; belt and braces).
	if g := s.spec.Cgroup; g != nil {
		g.Kill()
	}
	return s.finish(res, ws, reason, violation, cancelled)
}

// finish completes res, whose wall time, usage by rusage and network are
// set, from the program's wait status ws, the supervisor's kill reason,
// the captured output and the cgroup's usage since the run's start.
func (s *Sandbox) finish(res *Result, ws syscall.WaitStatus, reason Status, violation string, cancelled error) (*Result, error) {
	if s.stdout != nil {
		res.Stdout, res.StdoutTruncated = s.stdout.text()
		res.Stdout, res.StdoutEncoding = encodeOutput(res.Stdout, res.StdoutTruncated)
	}
	if s.stdoutCap != nil {
		res.StdoutTruncated = s.stdoutCap.cut()
	}
	if s.stderrCap != nil {
		res.StderrTruncated = s.stderrCap.cut()
	}
	if s.stderr != nil {
		res.Stderr, res.StderrTruncated = s.stderr.text()
		res.Stderr, res.StderrEncoding = encodeOutput(res.Stderr, res.StderrTruncated)
	}
	res.Status, res.ExitCode = classify(ws, reason, res.CPUTimeMS, s.spec.CPUTime)
	if g := s.spec.Cgroup; g != nil {
		// The usage of every task that ran in the group (since the run's
		// start: a prepared sandbox's bases).
		if cs, err := g.Stats(); err != nil {
			// The program ran: this is no setup error (a caller may retry
			// those). The result keeps pid 1's own rusage and says what
			// it lacks.
			res.Error = &policy.ErrorInfo{Class: policy.ClassInternal, Stage: "cgroup stats",
				Message: "cgroup stats unavailable, so memory and CPU are pid 1's own and an OOM kill reads as a SIGKILL: " + err.Error()}
			s.log.Warn("reading a run's cgroup stats", slog.Any("error", err))
		} else {
			s.endStats = &cs
			cpu := cs.CPU - s.cpuBase
			res.MemoryPeakBytes, res.CPUTimeMS = cs.MemoryPeak, cpu.Milliseconds()
			if cs.OOMKills > s.oomBase && (reason == "" || reason == StatusSignaled) {
				res.Status = StatusMemoryLimit
			} else if reason == "" && atCPULimit(cpu, s.spec.CPUTime) && res.Status == StatusSignaled && ws.Signal() == syscall.SIGKILL {
				res.Status = StatusCPULimit
			}
		}
	}
	if res.Status == StatusSeccompViolation {
		res.SeccompSyscall = violation
	}
	if ws.Signaled() {
		res.Signal = unix.SignalName(ws.Signal())
	}
	if res.Status.Killed() && !ws.Signaled() {
		// A kill whose cause came after the program's own end (its
		// output overflowed as it exited): the code says airlock's kill,
		// as the status does.
		res.ExitCode = 128 + int(syscall.SIGKILL)
	}
	var err error
	if reason == reasonCancelled {
		err = fmt.Errorf("nsjail: run cancelled: %w", cancelled)
	}
	s.phase("result")
	s.log.Debug("sandbox ended", slog.Int("pid", s.pid), slog.String("status", string(res.Status)))
	return res, err
}

// programStatus returns the wait status the reaper reported for its
// program (see reap), if it did, or the failure it reported, and closes
// the status socket. The init is gone: whatever it sent is queued, and
// the read never blocks.
func (s *Sandbox) programStatus() (syscall.WaitStatus, bool, error) {
	s.mu.Lock()
	f := s.status
	s.status = nil
	s.mu.Unlock()
	if f == nil {
		return 0, false, nil
	}
	defer f.Close()
	var buf [4 << 10]byte
	for {
		n, _, _, _, err := unix.Recvmsg(int(f.Fd()), buf[:], nil, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNRESET) {
			continue // ECONNRESET comes once, before the packets (awaitStatus)
		}
		var st initStatus
		switch {
		case err != nil || n == 0:
			return 0, false, nil // none: the init was killed
		case st.Unmarshal(buf[:n]) != nil:
			return 0, false, &policy.SetupError{Stage: "status", Err: errors.New("bad message from the reaper")}
		case st.Ended:
			return syscall.WaitStatus(st.WaitStatus), true, nil
		}
		return 0, false, &policy.SetupError{Stage: st.Stage, Err: &initError{msg: st.Msg, errno: syscall.Errno(st.Errno)}}
	}
}

// classify maps the wait status and the supervisor's own kill reason to a
// Status and exit code: the program's code, or 128+N when signal N ended
// it (the supervisor's SIGKILL included).
func classify(ws syscall.WaitStatus, reason Status, cpuMS int64, cpuLimit time.Duration) (Status, int) {
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	switch {
	case reason == StatusTimeout || reason == StatusCPULimit || reason == StatusOutputLimit ||
		reason == StatusSeccompViolation || reason == reasonCancelled:
		return reason, code
	case ws.Exited() && ws.ExitStatus() == 0:
		return StatusOK, 0
	case ws.Exited():
		return StatusExited, code
	case ws.Signal() == syscall.SIGSYS:
		// The filter's KILL_PROCESS (a non-native syscall ABI, or a kill
		// rule without a listener). A program that raises SIGSYS on
		// itself reads the same: bare, that status means the same.
		return StatusSeccompViolation, code
	case ws.Signal() == syscall.SIGXCPU:
		return StatusCPULimit, code
	case ws.Signal() == syscall.SIGKILL && atCPULimit(time.Duration(cpuMS)*time.Millisecond, cpuLimit):
		// RLIMIT_CPU's hard limit is a SIGKILL from the kernel.
		return StatusCPULimit, code
	}
	return StatusSignaled, code
}

// ProcessStatus classifies the end of a live sandbox's process (Live's
// WaitStatus) as a run's program is classified: killed is the caller's
// own kill reason (StatusTimeout, StatusOutputLimit, StatusCancelled; ""
// for none), oom whether the sandbox's cgroup counted an OOM kill while
// the process ran. It returns the status, the exit code (128+N for
// signal N, and for a kill of the caller's) and the signal's name.
func ProcessStatus(ws syscall.WaitStatus, killed Status, oom bool) (Status, int, string) {
	status, code := classify(ws, killed, 0, 0)
	sig := ""
	if ws.Signaled() {
		sig = unix.SignalName(ws.Signal())
		if sig == "" {
			sig = fmt.Sprintf("SIG%d", int(ws.Signal()))
		}
		if oom && killed == "" && ws.Signal() == syscall.SIGKILL {
			status = StatusMemoryLimit
		}
	}
	if status.Killed() && !ws.Signaled() {
		// Killed as it ended by itself: the code says the kill (finish).
		code, sig = 128+int(syscall.SIGKILL), "SIGKILL"
	}
	return status, code, sig
}

// atCPULimit reports whether cpu reached the CPU-time limit (0 = none),
// near enough: RLIMIT_CPU kills on the scheduler's exact runtime, while
// rusage's utime+stime (tick-sampled, then scaled) read 870..980 ms for
// a 1 s kill here, and a v1 cgroup misses what the init used before it
// joined. Nothing inside the pid namespace can SIGKILL its pid 1, so a
// SIGKILL near the budget with no kill of the supervisor's is the limit.
func atCPULimit(cpu, limit time.Duration) bool {
	return limit > 0 && cpu >= limit*3/4
}
