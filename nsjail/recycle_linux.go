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
	"flistxattr", "getpriority", "sched_getscheduler", "ioprio_get", "sched_getaffinity", "mq_unlink", "pread64"}

// recycledRun is a recycled sandbox's run's own state.
type recycledRun struct {
	p *Prepared
	// Set before the run's exited closes: whether the reaper reported
	// its end (ws) and, with it, the sandbox reset for the next run.
	ended, recycled bool
	ws              syscall.WaitStatus
	// over (under the run's mu) is set once the run is over: a kill
	// from then on must not reach the sandbox, which may serve another.
	over bool
}

// recycleDirs returns the directories of plan a recycling reaper empties
// between runs: the writable tmpfs mounts that no cover makes read-only,
// and the message queues. nil if a mount lies inside one of them (its
// content is no run's to delete).
func recycleDirs(plan rootfs.Plan) []string {
	covered := map[string]bool{}
	for _, op := range plan.Ops {
		if op.Kind == rootfs.KindCover {
			covered[op.Target] = true
		}
	}
	var dirs []string
	for _, op := range plan.Ops {
		if (op.Kind == rootfs.KindTmpfs && !op.ReadOnly && !covered[op.Target]) || op.Kind == rootfs.KindMqueue {
			dirs = append(dirs, op.Target)
		}
	}
	for _, d := range dirs {
		for _, op := range plan.Ops {
			if strings.HasPrefix(op.Target, d+"/") || strings.IndexByte(d, 0) >= 0 || path.Clean(d) != d {
				return nil
			}
		}
	}
	return dirs
}

// Recycles reports whether p serves more than one run (Spec.Recycle, and
// the host and plan allow it).
func (p *Prepared) Recycles() bool { return p.s.recycle }

// Reusable reports whether p can Start another run: it recycles, its
// last run's Wait returned and that run left it reset.
func (p *Prepared) Reusable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.s.recycle && !p.used && !p.busy
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
	select {
	case <-proc.exited:
		p.discard()
		return nil, &policy.SetupError{Stage: "init", Err: errors.New("the prepared sandbox's reaper died while it waited")}
	default:
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
	// process's is closed when it is reaped).
	proc.mu.Lock()
	if proc.pidfd >= 0 {
		if fd, err := unix.FcntlInt(uintptr(proc.pidfd), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			s.pidfd = fd
		}
	}
	proc.mu.Unlock()
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
	stdin := p.devNull
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
	started := make(chan error, 1)
	go s.follow(p.status, started)
	go s.watch(ctx)
	if stdinW != nil {
		go func() {
			io.Copy(stdinW, spec.Stdin)
			stdinW.Close()
		}()
	}
	pc := programConfigFor(&spec)
	pc.Seccomp, pc.TTY = nil, false
	if err := jailinit.WriteMsg(p.c.specW, pc.Marshal()); err != nil {
		s.kill(StatusSignaled)
		<-s.exited
		p.discard()
		return nil, &policy.SetupError{Stage: "send program", Err: err}
	}
	if err := <-started; err != nil {
		// The reaper ends after a failed start: so does the sandbox.
		s.kill(StatusSignaled)
		<-s.exited
		p.discard()
		return nil, err
	}
	s.phase("exec")
	close(s.execd)
	return s, nil
}

// follow reads a recycled run's reports: its start (or why not) goes to
// started, its end ends the run. EOF is the sandbox's death (killed, or
// its reaper gone): the run ends once the process is reaped.
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
	for !rec.ended {
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
		case st.Ended:
			rec.ended, rec.recycled, rec.ws = true, st.Prepared, syscall.WaitStatus(st.WaitStatus)
		case st.Started:
			start(nil)
		case st.Stage != "":
			if st.Msg == "" && st.Errno != 0 {
				st.Msg = syscall.Errno(st.Errno).Error()
			}
			startErr = &policy.SetupError{Stage: st.Stage, Err: s.initFailure(st)}
			start(startErr) // the reaper ends after it
		}
	}
	if !rec.ended {
		<-rec.p.s.exited
		switch s.killReason() {
		case StatusTimeout:
			startErr = &policy.SetupError{Stage: "init", Err: errSetupTimeout}
		case reasonCancelled:
			startErr = fmt.Errorf("nsjail: run cancelled during setup: %w", s.cancelErr())
		}
		if startErr == nil {
			startErr = &policy.SetupError{Stage: "reaper", Err: fmt.Errorf("pid 1 ended before it started the program: %v", rec.p.s.cmd.ProcessState)}
		}
	}
	start(startErr)
	s.drainOutput()
	closeFD(s.pidfd)
	s.mu.Lock()
	s.pidfd = -1
	s.mu.Unlock()
	close(s.exited)
}

// waitRecycled is Wait for a recycled run: its wait status is the one the
// reaper reported (or, when the sandbox died, pid 1's), its usage the
// cgroup's since the run's start. The prepared sandbox takes its next run
// only when this one ended reset, unkilled and without an OOM kill;
// otherwise it is discarded here.
func (s *Sandbox) waitRecycled() (*Result, error) {
	<-s.exited
	wall := time.Since(s.start)
	s.phase("exited")
	rec, proc := s.rec, s.rec.p.s
	s.mu.Lock()
	rec.over = true
	cancelled, reason, violation := s.cancel, s.reason, s.violation
	s.mu.Unlock()
	if !rec.ended {
		// The sandbox died: a kill rule's notification kills it as the
		// prepared sandbox's (watchNotify), with its reason.
		<-proc.exited
		proc.mu.Lock()
		if reason == "" {
			reason = proc.reason
		}
		if violation == "" {
			violation = proc.violation
		}
		proc.mu.Unlock()
	}
	ws := rec.ws
	if !rec.ended {
		if st := proc.cmd.ProcessState; st != nil {
			ws = st.Sys().(syscall.WaitStatus)
		}
	}
	res, err := s.finish(&Result{WallTimeMS: wall.Milliseconds(), Enforced: s.enforced}, ws, reason, violation, cancelled)
	// finish read the cgroup (endStats; nil when it could not).
	reusable := rec.ended && rec.recycled && reason == "" && res != nil && res.Error == nil && s.endStats != nil &&
		s.endStats.OOMKills == s.oomBase && (res.Status == StatusOK || res.Status == StatusExited || res.Status == StatusSignaled)
	if reusable {
		rec.p.mu.Lock()
		rec.p.base = *s.endStats
		rec.p.mu.Unlock()
		rec.p.release()
	} else {
		rec.p.discard()
	}
	return res, err
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
// socket through the runtime's poller (a copy of it, non-blocking: the
// original was put in blocking mode by the preparation's reads), and
// /dev/null, the stdin of a run without one. Called once, at Prepare.
func (p *Prepared) setupRuns() error {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	p.devNull = null
	fd, err := unix.FcntlInt(p.c.statusR.Fd(), unix.F_DUPFD_CLOEXEC, 0)
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
