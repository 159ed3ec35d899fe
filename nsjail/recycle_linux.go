//go:build linux

package nsjail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/internal/jailinit"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/rootfs"
	"golang.org/x/sys/unix"
)

// A recycled sandbox (Spec.Recycle) serves one run after another: its
// reaper (cmd/airlock-spawn, "r" mode) waits for each run's streams and
// program, and after each run kills and reaps every process, empties the
// writable tmpfs mounts and checks what it cannot empty before it
// reports the run's end as "ended" and "prepared". Each run is a Sandbox
// of its own (rec set) that shares the prepared sandbox's process: its
// kill is the whole sandbox's, its end is the reaper's report, not pid
// 1's exit.

// RecycleSyscalls are the calls a recycling reaper makes under the
// program's filter besides ReaperSyscalls: its streams, the reset
// between runs and the checks. The default profile allows them all.
var RecycleSyscalls = []string{"recvmsg", "dup3", "openat", "getdents64", "unlinkat", "fchmodat", "fchmod", "lseek",
	"flistxattr", "getpriority", "sched_getscheduler", "ioprio_get", "sched_getaffinity", "mq_unlink", "pread64",
	"fstatfs", "ioctl", "sched_getattr"}

// recycledRun is a recycled sandbox's run's own state.
type recycledRun struct {
	p *Prepared
	// Set before the run's exited closes: whether the reaper reported
	// the program's end (ws, at endedAt), and then the sandbox reset for
	// the next run (recycled).
	ended, recycled bool
	ws              syscall.WaitStatus
	endedAt         time.Time
	// reported: the start failed in a step the reaper reported (the
	// program's exec, chdir, rlimits); it then resets and serves on.
	reported bool
	// over (under the run's mu) is set once the reaper reported the
	// program's end: a kill or signal from then on must not reach the
	// sandbox, which is being reset or serves another run.
	over bool
	// wait makes Wait's outcome, and its release or discard of the
	// sandbox, happen once.
	wait   sync.Once
	res    *Result
	resErr error
}

// ErrPreparedGone: a prepared sandbox was found dead when a request came
// (killed between two runs, or its reaper ended): nothing of the request
// ran, and a caller may run it elsewhere.
var ErrPreparedGone = errors.New("nsjail: the prepared sandbox is gone")

// recycleMaxDirs bounds recycleDirs (cmd/airlock-spawn: MAXWIPE).
const recycleMaxDirs = 8

// recycleDirs returns the directories of plan a recycling reaper empties
// between runs: the writable tmpfs mounts that no cover makes read-only,
// and the message queues. nil (no recycling) when another op mounts on
// one of them (a bind over a tmpfs: its content is no run's to delete)
// or puts something inside one, or past recycleMaxDirs.
func recycleDirs(plan rootfs.Plan) []string {
	covered := map[string]bool{}
	for _, op := range plan.Ops {
		if op.Kind == rootfs.KindCover {
			covered[op.Target] = true
		}
	}
	var dirs []string
	var at []int
	for i, op := range plan.Ops {
		if (op.Kind == rootfs.KindTmpfs && !op.ReadOnly && !covered[op.Target]) || op.Kind == rootfs.KindMqueue {
			dirs, at = append(dirs, op.Target), append(at, i)
		}
	}
	for k, d := range dirs {
		if strings.IndexByte(d, 0) >= 0 || path.Clean(d) != d {
			return nil
		}
		for i, op := range plan.Ops {
			// (A dir op of the same target makes its mount point.)
			if i != at[k] && (op.Target == d && op.Kind != rootfs.KindDir || strings.HasPrefix(op.Target, d+"/")) {
				return nil
			}
		}
	}
	if len(dirs) > recycleMaxDirs {
		return nil
	}
	return dirs
}

// Recycles reports whether p serves more than one run (Spec.Recycle, and
// the host and plan allow it).
func (p *Prepared) Recycles() bool { return p.s.recycle }

// Reusable reports whether p can Start another run: it recycles, its
// last run's Wait returned, that run left it reset, and it is alive.
func (p *Prepared) Reusable() bool {
	p.mu.Lock()
	ok := p.s.recycle && !p.used && !p.busy
	p.mu.Unlock()
	return ok && p.alive()
}

// alive reports whether p's process is still there and nothing killed it.
func (p *Prepared) alive() bool {
	select {
	case <-p.s.exited:
		return false
	default:
	}
	return p.s.killReason() == ""
}

// Runs is how many runs p started.
func (p *Prepared) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

// startRecycled starts spec's program as p's next run. Ordering: the
// cgroup's bases are taken and its peak reset before the streams and
// program go out (the reaper forks on the program), so that nothing of
// the run is missed; the run's end is the reaper's report, read by
// follow.
func (p *Prepared) startRecycled(ctx context.Context, spec Spec) (*Sandbox, error) {
	p.mu.Lock()
	if p.used || p.busy {
		p.mu.Unlock()
		return nil, errUsed
	}
	p.busy = true
	p.runs++
	p.mu.Unlock()
	proc := p.s
	if !p.alive() {
		// Killed between runs (a kill rule's notification of the last
		// run that came after its end) or its reaper gone: this request
		// ran nothing, and is not to blame for it.
		p.discard()
		return nil, &policy.SetupError{Stage: "init", Err: ErrPreparedGone}
	}
	g := spec.Cgroup
	if g == nil {
		p.discard()
		return nil, policy.Invalid("prepared sandbox", "a recycled sandbox's run needs its cgroup")
	}
	s := newSandbox(&spec)
	s.rec = &recycledRun{p: p}
	p.mu.Lock()
	s.enforced.SandboxRun = p.runs
	p.mu.Unlock()
	s.pid, s.cmd, s.pidfd = proc.pid, proc.cmd, -1
	s.reaper, s.waits, s.readyAhead = true, true, true
	// The run's kill is the sandbox's, through a pidfd of its own (the
	// process's is closed when it is reaped). Without a spawn helper the
	// init is cmd's own process, which kill signals directly; with one,
	// cmd is the helper, so a run without its pidfd does not start.
	proc.mu.Lock()
	var dupErr error
	if proc.pidfd >= 0 {
		s.pidfd, dupErr = unix.FcntlInt(uintptr(proc.pidfd), unix.F_DUPFD_CLOEXEC, 0)
	}
	proc.mu.Unlock()
	if dupErr != nil {
		p.discard()
		return nil, &policy.SetupError{Stage: "pidfd", Err: dupErr}
	}
	fail := func(stage string, err error) (*Sandbox, error) {
		closeFD(s.pidfd)
		p.discard()
		return nil, &policy.SetupError{Stage: stage, Err: err}
	}
	// The bases: the usage at the last run's end (nothing runs between
	// runs). The peak is the group's own, reset.
	if err := g.ResetPeak(); err != nil {
		return fail("cgroup", err)
	}
	p.mu.Lock()
	s.cpuBase, s.oomBase = p.base.CPU, p.base.OOMKills
	p.mu.Unlock()
	// The run's streams: its stdin (a pipe fed from spec.Stdin, or
	// /dev/null, as a cold run gets without one), and the output pipes
	// that startOutput copies to the run's writers.
	var stdinR, stdinW *os.File
	var err error
	p.mu.Lock()
	stdin := p.devNull
	p.mu.Unlock()
	if spec.Stdin != nil {
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			return fail("pipe", err)
		}
		stdin = int(stdinR.Fd())
	}
	closeStdin := func() {
		if stdinR != nil {
			stdinR.Close()
			stdinW.Close()
		}
	}
	out, errw := s.outputs(&spec)
	var fds []int
	for _, w := range []io.Writer{s.outPipe(out), s.outPipe(errw)} {
		if f, ok := w.(*os.File); ok {
			fds = append(fds, int(f.Fd()))
		}
	}
	if len(fds) != 2 {
		closeStdin()
		s.startOutput(false)
		return fail("pipe", errors.New("no pipe for the run's output"))
	}
	err = p.sendStreams(unix.UnixRights(stdin, fds[0], fds[1]))
	if stdinR != nil {
		stdinR.Close()
	}
	s.startOutput(err == nil) // our write ends go: the run's processes hold the only ones
	if err != nil {
		closeStdin()
		return fail("send streams", err)
	}
	s.start, s.startNS = time.Now(), monotonicNS()
	s.runStart = s.start
	started := make(chan error, 1)
	go s.follow(p.status, started)
	go s.watch(ctx)
	if stdinW != nil {
		go func() {
			io.Copy(stdinW, spec.Stdin)
			stdinW.Close()
		}()
	}
	if spec.ProgramGate != nil {
		select {
		case <-spec.ProgramGate:
		case <-s.exited: // killed meanwhile: the write below fails, and says why
		}
	}
	pc := programConfigFor(&spec)
	pc.Seccomp, pc.TTY = nil, false
	if err := jailinit.WriteMsg(p.c.specW, pc.Marshal()); err != nil {
		s.kill(StatusSignaled)
		<-s.exited
		p.discard()
		if s.killReason() == StatusTimeout {
			err = errSetupTimeout // (while its ProgramGate held the program)
		}
		return nil, &policy.SetupError{Stage: "send program", Err: err}
	}
	if err := <-started; err != nil {
		// A start that failed before the exec (not found, a chdir, an
		// rlimit): the reaper resets and reports "prepared" again, and the
		// sandbox serves the next request. Any other failure ends it
		// (follow then sees its death).
		if rec := s.rec; !rec.reported {
			s.kill(StatusSignaled)
			<-s.exited
			p.discard()
		} else if <-s.exited; rec.recycled && p.alive() {
			p.release()
		} else {
			p.discard()
		}
		return nil, err
	}
	s.phase("exec")
	close(s.execd)
	return s, nil
}

// follow reads a recycled run's reports: its start (or why not) goes to
// started; "ended" ends the program (and, under mu, the run's reach: the
// reaper now resets the sandbox), then "prepared" says the reset held.
// EOF is the sandbox's death (killed, or its reaper gone, after a failed
// reset too): the run ends once the process is reaped.
func (s *Sandbox) follow(status syscall.RawConn, started chan<- error) {
	rec := s.rec
	var startErr error
	sent := false
	start := func(err error) {
		if !sent {
			sent = true
			started <- err
		}
	}
	var buf [4 << 10]byte
	for !rec.recycled {
		// Through the runtime's poller: a blocked read parks only this
		// goroutine, not a thread.
		var n int
		var err error
		if rerr := status.Read(func(fd uintptr) bool {
			n, _, _, _, err = unix.Recvmsg(int(fd), buf[:], nil, 0)
			return err != unix.EAGAIN && err != unix.EINTR
		}); rerr != nil {
			err = rerr
		}
		if err != nil || n == 0 {
			break
		}
		var st initStatus
		switch {
		case st.Unmarshal(buf[:n]) != nil:
			startErr = &policy.SetupError{Stage: "status", Err: errors.New("bad message from the reaper")}
			s.kill(StatusSignaled)
		case st.Ended && !rec.ended:
			s.mu.Lock()
			rec.ended, rec.ws, rec.endedAt, rec.over = true, syscall.WaitStatus(st.WaitStatus), time.Now(), true
			s.mu.Unlock()
		case st.Prepared && (rec.ended || sent && startErr != nil):
			// Reset after the program's end, or after a start that
			// failed before the exec (the reaper serves on).
			rec.recycled = true
		case st.Started:
			start(nil)
		case st.Stage != "":
			if st.Msg == "" && st.Errno != 0 {
				st.Msg = syscall.Errno(st.Errno).Error()
			}
			startErr = &policy.SetupError{Stage: st.Stage, Err: s.initFailure(st)}
			rec.reported = !sent // set before start sends: Start reads it after
			start(startErr)
		}
	}
	if !rec.recycled {
		<-rec.p.s.exited
	}
	if !rec.ended && !sent {
		reason := s.killReason()
		if reason == "" {
			reason = rec.p.s.killReason() // a kill rule's notification (watchNotify)
		}
		switch reason {
		case StatusTimeout:
			startErr = &policy.SetupError{Stage: "init", Err: errSetupTimeout}
		case reasonCancelled:
			startErr = fmt.Errorf("nsjail: run cancelled during setup: %w", s.cancelErr())
		case StatusSeccompViolation, StatusOutputLimit:
			// The program ran: killed for a filtered call or for its
			// output before the reaper's "started" went out. Wait says
			// which, as for a cold run.
			startErr = nil
		default:
			if startErr == nil {
				startErr = &policy.SetupError{Stage: "reaper", Err: fmt.Errorf("pid 1 ended before it started the program: %v", rec.p.s.cmd.ProcessState)}
			}
		}
	}
	start(startErr)
	s.drainOutput()
	s.mu.Lock()
	rec.over = true
	closeFD(s.pidfd)
	s.pidfd = -1
	s.mu.Unlock()
	close(s.exited)
}

// waitRecycled is Wait for a recycled run: its wait status is the one the
// reaper reported (or, when the sandbox died, pid 1's), its wall time
// ends at that report, its usage is the cgroup's since the run's start.
// The prepared sandbox takes its next run only when this one ended
// reset, unkilled (by the run or by the sandbox's own watchers: a kill
// rule's notification) and without an OOM kill; otherwise it is
// discarded here. Once: a second Wait returns the same.
func (s *Sandbox) waitRecycled() (*Result, error) {
	rec := s.rec
	rec.wait.Do(func() {
		<-s.exited
		end := time.Now()
		if rec.ended {
			end = rec.endedAt
		}
		s.phase("exited")
		proc := rec.p.s
		s.mu.Lock()
		cancelled, reason, violation := s.cancel, s.reason, s.violation
		s.mu.Unlock()
		// The sandbox's own reason: a kill rule's notification kills it
		// as the prepared sandbox's (watchNotify), during this run.
		proc.mu.Lock()
		procReason, procViolation := proc.reason, proc.violation
		proc.mu.Unlock()
		if reason == "" {
			reason = procReason
		}
		if violation == "" {
			violation = procViolation
		}
		ws := rec.ws
		if !rec.ended {
			if st := proc.cmd.ProcessState; st != nil {
				ws = st.Sys().(syscall.WaitStatus)
			}
		}
		rec.res, rec.resErr = s.finish(&Result{WallTimeMS: end.Sub(s.runStart).Milliseconds(), Enforced: s.enforced}, ws, reason, violation, cancelled)
		res := rec.res
		// finish read the cgroup (endStats; nil when it could not).
		reusable := rec.recycled && reason == "" && procReason == "" && res != nil && res.Error == nil && s.endStats != nil &&
			s.endStats.OOMKills == s.oomBase && (res.Status == StatusOK || res.Status == StatusExited || res.Status == StatusSignaled)
		if reusable {
			rec.p.mu.Lock()
			rec.p.base = *s.endStats
			rec.p.mu.Unlock()
			rec.p.release()
		} else {
			rec.p.discard()
		}
	})
	return rec.res, rec.resErr
}

// sendStreams sends a run's streams to the reaper, on the status socket.
func (p *Prepared) sendStreams(rights []byte) error {
	var err error
	if werr := p.status.Write(func(fd uintptr) bool {
		err = unix.Sendmsg(int(fd), []byte{0}, rights, nil, unix.MSG_NOSIGNAL)
		return err != unix.EAGAIN && err != unix.EINTR
	}); werr != nil {
		return werr
	}
	return err
}

// setupRuns readies what a recycled sandbox's runs share: the status
// socket through the runtime's poller (a copy of it, non-blocking, whose
// file the runs' reads own: the original's may be closed), and
// /dev/null, the stdin of a run without one. Called once, at Prepare.
func (p *Prepared) setupRuns() error {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	p.devNull = null
	rc, err := p.c.statusR.SyscallConn()
	if err != nil {
		return err
	}
	fd := -1
	if cerr := rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	p.statusNB = os.NewFile(uintptr(fd), "status")
	p.status, err = p.statusNB.SyscallConn()
	return err
}

// release makes p take its next run.
func (p *Prepared) release() {
	p.mu.Lock()
	p.busy = false
	p.mu.Unlock()
}

// discard ends a recycled sandbox: killed and reaped, its channels
// closed. Its cgroup is the caller's to remove.
func (p *Prepared) discard() {
	p.mu.Lock()
	already := p.used
	p.used = true
	p.mu.Unlock()
	if already {
		return
	}
	p.s.Kill()
	<-p.s.exited
	p.closeFiles()
}
