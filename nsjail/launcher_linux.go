//go:build linux

package nsjail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/internal/jailinit"
	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// Sandbox is a started sandbox whose program is running.
type Sandbox struct {
	spec    *Spec
	cmd     *exec.Cmd
	log     *slog.Logger
	start   time.Time
	startNS int64 // start on CLOCK_MONOTONIC, for the init's marks
	// runStart is where the timeout and the wall time count from: start,
	// except in an init launched ahead (Launched.Start), where it is the
	// run's start and start stays the launch's (the phases' base).
	runStart time.Time
	marksIn  int // the init's marks logged so far
	enforced Enforced
	stdout   *capture
	stderr   *capture
	// stdoutCap and stderrCap cap the caller's writers (Spec.LimitStreams).
	stdoutCap, stderrCap *streamCap

	exited chan struct{} // closed once the init is reaped
	execd  chan struct{} // closed once the program was exec'd (signals are forwarded from then on)
	// status is the init's status socket from the program's start on,
	// for the reaper's last report (programStatus); under mu.
	status  *os.File
	waitErr error // cmd.Wait's error, set before exited closes
	// pid is the init's host pid. Forked by the supervisor, the init is
	// cmd's process; started by the spawn helper (Spec.SpawnPath), cmd is
	// the helper, and pidfd (-1 otherwise) the init's, for its kill; it is
	// closed, under mu, once the helper is reaped.
	pid   int
	pidfd int

	held        []*os.File     // namespaces kept until the init is reaped (holdNamespaces)
	placed      bool           // in its cgroup from its start: born there (v2) or moves itself (v1)
	joins       int            // v1: the tasks files the init moves itself with (initConfig.JoinCgroup)
	outs        []*outPipe     // the program's output pipes (outpipe_linux.go)
	programSent bool           // the program went with the spec (build)
	reaper      bool           // the init inherits the reaper (initConfig.Reaper)
	waits       bool           // a prepared sandbox's reaper waits for its program (Spec.ReaperWaits; build)
	readyAhead  bool           // the init's "ready" was read while preparing (waits)
	recycle     bool           // a prepared sandbox's reaper serves run after run (Spec.Recycle; build)
	live        bool           // a prepared sandbox's reaper is pid 1 of a live sandbox (Spec.Live; build)
	lastCap     int            // the kernel's last capability (initConfig.LastCap; ambient caps)
	cpuBase     time.Duration  // the cgroup's CPU time before the program (prepared sandboxes)
	oomBase     uint64         // the cgroup's OOM kills before the program (recycled runs)
	endStats    *cgroups.Stats // the cgroup's usage when Wait read it (nil: not read)
	egressLn    net.Listener   // net allow: the init's listener, until served (under mu)
	egressSent  bool           // the init sent it (under mu; egressLn may be gone already)

	mu        sync.Mutex
	reason    Status // why the supervisor killed it; "" = it did not
	cancel    error  // the context's error, when that was the reason
	violation string // the syscall a kill rule caught
	// rec is a recycled sandbox's run (recycle_linux.go); nil otherwise.
	rec *recycledRun
	// groupDone: the process backend's group kill at its program's end
	// is done (endGroup) and the leader may be reaped: no group kill may
	// follow (see kill).
	groupDone bool
	// endSent: the process backend's reaper was sent its end signal,
	// and is killed unless it ends within reaperEndGrace (see kill).
	endSent bool
}

// reasonCancelled is the kill reason when the caller's context ended:
// the Result's status is cancelled, and the run returns the context's
// error with it.
const reasonCancelled = StatusCancelled

// Run starts a sandbox and waits for it. Every outcome of the program is
// a Result with a nil error. A non-nil error means there is no trusted
// outcome: invalid spec (ErrInvalid), host cannot do it (ErrUnsupported),
// transient shortage (ErrUnavailable), cancelled ctx, or a setup failure;
// for a setup failure the Result (status setup_error) is returned too, so
// it can be reported.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	t0 := time.Now()
	sb, err := Start(ctx, spec)
	return waitStarted(t0, &spec, sb, err)
}

// waitStarted waits for a sandbox Start returned, or turns Start's error
// into Run's outcome: a timeout during setup is a timeout Result (a slow
// or overloaded host, not a broken sandbox); a setup failure is a
// setup_error Result with the error.
func waitStarted(t0 time.Time, spec *Spec, sb *Sandbox, err error) (*Result, error) {
	if errors.Is(err, errSetupTimeout) {
		return &Result{Status: StatusTimeout, ExitCode: 128 + int(syscall.SIGKILL), Signal: "SIGKILL", WallTimeMS: time.Since(t0).Milliseconds(),
			Error: &policy.ErrorInfo{Class: policy.ClassUnavailable, Retryable: true, Stage: "init", Message: errSetupTimeout.Error(),
				Fix: "a longer timeout, or a less loaded host"}, Enforced: enforcedFor(spec)}, nil
	}
	if err != nil {
		var se *policy.SetupError
		if errors.As(err, &se) {
			return &Result{Status: StatusSetupError, ExitCode: ExitCodeOf(err), WallTimeMS: time.Since(t0).Milliseconds(),
				Error: policy.Describe(err), Enforced: enforcedFor(spec)}, err
		}
		return nil, err
	}
	return sb.Wait()
}

// cancelled kills the sandbox because ctx ended, and keeps ctx's error
// for Wait.
func (s *Sandbox) cancelled(ctx context.Context) {
	s.mu.Lock()
	s.cancel = ctx.Err()
	s.mu.Unlock()
	s.kill(reasonCancelled)
}

// outputs returns the program's streams: spec's writers, or captures
// capped at spec.OutputLimit whose overflow kills the sandbox.
func (s *Sandbox) outputs(spec *Spec) (stdout, stderr io.Writer) {
	limit := spec.OutputLimit
	if limit == 0 {
		limit = policy.DefaultMaxOutput
	}
	stdout, stderr = spec.Stdout, spec.Stderr
	if spec.LimitStreams {
		overflow := func() { s.kill(StatusOutputLimit) }
		if stdout != nil {
			s.stdoutCap = &streamCap{w: stdout, left: limit, overflow: overflow}
			stdout = s.stdoutCap
		}
		if stderr != nil {
			s.stderrCap = &streamCap{w: stderr, left: limit, overflow: overflow}
			stderr = s.stderrCap
		}
	}
	if stdout == nil {
		s.stdout = &capture{limit: limit, overflow: func() { s.kill(StatusOutputLimit) }}
		stdout = s.stdout
	}
	if stderr == nil {
		s.stderr = &capture{limit: limit, overflow: func() { s.kill(StatusOutputLimit) }}
		stderr = s.stderr
	}
	return stdout, stderr
}

// Start builds the sandbox and returns once its program was exec'd, or
// with an error if setup failed (the init is reaped by then). Cancelling
// ctx kills the sandbox; Wait then returns ctx's error.
func Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	s := newSandbox(&spec)
	c, err := s.launch()
	if err != nil {
		return nil, err
	}
	defer c.close()
	return s.startCold(ctx, c)
}

// startCold watches a started init under ctx, sends it its jail and its
// program at once, and returns once the program was exec'd.
func (s *Sandbox) startCold(ctx context.Context, c *initChannels) (*Sandbox, error) {
	go s.watch(ctx)
	if err := s.build(c, false); err != nil {
		return nil, err
	}
	if err := s.run(c); err != nil {
		return nil, err
	}
	return s, nil
}

func newSandbox(spec *Spec) *Sandbox {
	s := &Sandbox{spec: spec, log: spec.Logger, exited: make(chan struct{}), execd: make(chan struct{}), enforced: enforcedFor(spec)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

func initConfigFor(spec *Spec) initConfig {
	return initConfig{Hostname: or(spec.Hostname, "airlock"), NetNS: !spec.HostNetwork, Plan: spec.Plan, Staging: stagingDir, Process: spec.Process, Landlock: spec.Landlock, EgressPort: spec.EgressPort,
		TimerSlack: programTimerSlack(spec.TimerSlack), SetSignals: spec.SetSignals, SignalsIgnored: spec.SignalsIgnored,
		SignalsBlocked: spec.SignalsBlocked}
}

// programTimerSlack is the timer slack the program starts with: slack,
// or where it is 0, the calling thread's (which a child of this process
// would inherit). Never 0: the init always sets it, replacing the
// helper's InitTimerSlack.
func programTimerSlack(slack uint64) uint64 {
	if slack != 0 {
		return slack
	}
	if s, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil && s > 0 {
		return uint64(s)
	}
	return defaultTimerSlack
}

// defaultTimerSlack is the kernel's default timer slack (50 µs), for a
// thread whose own cannot be read.
const defaultTimerSlack = 50000

func programConfigFor(spec *Spec) programConfig {
	return programConfig{Args: spec.Args, Env: spec.Env, Dir: or(spec.Dir, "/workspace"), Rlimits: spec.Rlimits, Seccomp: spec.Seccomp, TTY: spec.TTY != nil}
}

// initChannels are the parent's ends of the init's spec pipe (fd 3) and
// status socket (fd 4).
type initChannels struct{ specW, statusR *os.File }

func (c *initChannels) close() {
	c.specW.Close()
	if c.statusR != nil {
		c.statusR.Close()
	}
}

// launch starts the init with its two channels.
func (s *Sandbox) launch() (*initChannels, error) {
	// On cgroup v2 the init is born in its cgroup (CLONE_INTO_CGROUP), so
	// not even its own setup escapes the limits. On v1 it gets the
	// group's tasks files and its exec thread moves itself first thing
	// (see SelfFiles: no global lock, no grace period to wait for).
	// Where clone3 is refused, build places it by pid: on Linux >= 5.12
	// that is an outer seccomp filter (Docker's default profile answers
	// clone3 with ENOSYS, so that libcs fall back to clone) or a target
	// the kernel will not place a task in by clone (EOPNOTSUPP: not a
	// valid domain cgroup).
	cgfd := -1
	var tasks []*os.File
	if g := s.spec.Cgroup; g != nil {
		if cgfd = g.DirFD(); cgfd < 0 {
			var err error
			if tasks, err = g.SelfFiles(); err != nil {
				return nil, &policy.SetupError{Stage: "cgroup placement", Err: err}
			}
		}
	}
	defer closeAll(tasks) // the init holds its own copies once started
	s.placed, s.joins = cgfd >= 0 || len(tasks) > 0, len(tasks)
	s.lastCap = lastCap()
	// The reaper goes after the tasks files (internal/jailinit/reaper_linux.go).
	// The process backend's is a subreaper that kills what is left of
	// the run (spawn.c).
	inherit := func(tasks []*os.File) []*os.File { return tasks }
	if !s.spec.NoReaper {
		path, err := reaperPath(s.spec)
		if err != nil {
			return nil, err
		}
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &policy.SetupError{Stage: "reaper", Err: fmt.Errorf("open %s: %w", path, err)}
		}
		reaper := os.NewFile(uintptr(fd), "reaper")
		defer reaper.Close()
		s.reaper = true
		inherit = func(tasks []*os.File) []*os.File { return append(slices.Clip(tasks), reaper) }
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, &policy.SetupError{Stage: "pipe", Err: err}
	}
	statusR, statusW, err := socketPair()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, &policy.SetupError{Stage: "socketpair", Err: err}
	}
	s.start = time.Now()
	s.startNS = monotonicNS()
	s.runStart = s.start
	err = s.startInit(specR, statusW, cgfd, inherit(tasks))
	if cgfd >= 0 && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)) {
		s.placed = false
		err = s.startInit(specR, statusW, -1, inherit(nil))
	}
	if cgfd >= 0 {
		unix.Close(cgfd)
	}
	// The init holds its own copies now (or never will).
	specR.Close()
	statusW.Close()
	if err != nil {
		specW.Close()
		statusR.Close()
		return nil, startError(err)
	}
	s.log.Debug("sandbox started", slog.Int("pid", s.pid))
	s.phase("launched")
	return &initChannels{specW: specW, statusR: statusR}, nil
}

// phase logs, at debug level, that a step of the run is done and how
// long after the start: where a start's milliseconds go. Never payload.
func (s *Sandbox) phase(name string) {
	s.log.Debug("phase", slog.String("phase", name), slog.Duration("since_start", time.Since(s.start)))
}

// initPhases logs the init's own timing marks (initMarks) as phases.
func (s *Sandbox) initPhases(marks []int64) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	for _, m := range marks {
		if s.marksIn < len(initMarks) && m > 0 {
			s.log.Debug("phase", slog.String("phase", initMarks[s.marksIn]), slog.Duration("since_start", time.Duration(m-s.startNS)))
		}
		s.marksIn++
	}
}

// build sends the init its jail and returns once the jail is built, the
// init is confined and in the run's cgroup; the init then waits for its
// program. A cold sandbox (ahead false) gets its program at once; a
// prepared one (a warm pool's) gets it from run, with its request.
func (s *Sandbox) build(c *initChannels, ahead bool) error {
	cfg := initConfigFor(s.spec)
	cfg.JoinCgroup, cfg.Reaper, cfg.LastCap = s.joins, s.reaper, s.lastCap
	// Only a prepared sandbox's reaper waits: a cold one's program, its
	// filter included, goes to the init with the spec.
	s.waits = s.reaper && s.spec.ReaperWaits && ahead && !s.spec.Process
	cfg.ReaperWaits = s.waits
	if s.waits && s.spec.Live {
		cfg.Live, s.live = true, true
	} else if s.waits && s.spec.Recycle {
		// What the reaper empties between runs; a plan it cannot reset
		// (a mount inside one of them) serves one run.
		if dirs := recycleDirs(s.spec.Plan); len(dirs) > 0 {
			cfg.Recycle, s.recycle = dirs, true
		}
	}
	// Placed by pid (v2 where clone3 was refused) before the spec: from
	// its first step on, the init is in its final cgroup (its cgroup
	// namespace is rooted there), as when born there or moving itself.
	// The attach waits for an RCU grace period (milliseconds) on this
	// path only. An init that failed first (a foreign build) says why.
	// An init launched ahead of its cgroup (Launch) on v1 is sent the
	// group's tasks files on its status socket, before the spec, and
	// moves itself at its step 2 as one that inherits them does.
	if s.spec.Cgroup != nil && !s.placed {
		tasks, err := s.spec.Cgroup.SelfFiles()
		if err == nil && len(tasks) > 0 {
			err = sendFiles(c.statusR, tasks)
			cfg.SentCgroup = len(tasks)
			closeAll(tasks)
		} else if err == nil {
			err = s.spec.Cgroup.Add(s.pid)
		}
		if err != nil {
			return s.sendFailed("cgroup placement", c, err)
		}
		s.phase("placed")
	}
	if err := jailinit.WriteMsg(c.specW, cfg.Marshal()); err != nil {
		return s.sendFailed("send spec", c, err)
	}
	// A cold sandbox gets its program now, so the init goes on from its
	// jail to the exec without waiting for us to read "prepared" and
	// answer (a round trip: 0.3 ms here). A write that blocks on a full
	// pipe resumes when the init reads the program.
	if !ahead {
		if err := s.sendProgram(c); err != nil {
			return err
		}
	}
	// A reaper that waits gets its filter now, with the spec, and the
	// init goes on from "prepared" to the reaper's exec; the pipe stays
	// open for the request's program, which the reaper reads.
	if cfg.ReaperWaits {
		pc := jailinit.Program{Seccomp: s.spec.Seccomp}
		if err := jailinit.WriteMsg(c.specW, pc.Marshal()); err != nil {
			return s.sendFailed("send filter", c, err)
		}
	}
	err := s.awaitPrepared(c.statusR)
	if err == nil && s.waits {
		// Then the init loads the filter, reports "ready" (and its
		// listener) and execs the reaper, which reports "prepared" once
		// set up: a failure of those steps is the preparation's, not a
		// later request's.
		err = s.awaitPrepared(c.statusR)
		s.readyAhead = err == nil
	}
	if err == nil {
		err = s.checkEgressListener()
	}
	if err != nil {
		s.Kill()
		<-s.exited
		return err
	}
	if !s.spec.Process {
		s.holdNamespaces()
	}
	s.phase("prepared")
	return nil
}

// run sends the init its program (unless build did) and returns once it
// was exec'd.
func (s *Sandbox) run(c *initChannels) error {
	s.serveEgress()
	if !s.programSent {
		if err := s.sendProgram(c); err != nil {
			return err
		}
	}
	if err := s.awaitExec(c.statusR); err != nil {
		s.Kill()
		<-s.exited
		s.closeEgress()
		return err
	}
	// Wait reads the program's wait status from it (programStatus).
	s.mu.Lock()
	s.status, c.statusR = c.statusR, nil
	s.mu.Unlock()
	s.phase("exec")
	close(s.execd)
	return nil
}

// sendProgram writes the program to the init and closes the spec pipe.
//
// It waits for the spec's ProgramGate first, or for the init's end.
func (s *Sandbox) sendProgram(c *initChannels) error {
	if s.spec.ProgramGate != nil {
		select {
		case <-s.spec.ProgramGate:
		case <-s.exited:
			// Killed meanwhile (the timeout, the caller's context): the
			// write below fails, and the failure says why.
		}
	}
	pc := programConfigFor(s.spec)
	if s.waits {
		// To the reaper: its filter is loaded, and it has no terminal.
		pc.Seccomp, pc.TTY = nil, false
	}
	if err := jailinit.WriteMsg(c.specW, pc.Marshal()); err != nil {
		return s.sendFailed("send program", c, err)
	}
	s.programSent = true
	c.specW.Close()
	return nil
}

// errSetupTimeout: the wall-clock limit expired before the program was
// exec'd. Run reports it as a timeout Result.
var errSetupTimeout = errors.New("the timeout expired during setup, before the program ran")

// sendFailed is setupFailed for a write to the init's spec pipe: an init
// that failed a step of its own first (and so closed the pipe) says why,
// and its report wins over the broken pipe it left. Once the init is
// reaped the status socket has no writer left, so the read ends.
func (s *Sandbox) sendFailed(stage string, c *initChannels, err error) error {
	s.Kill()
	<-s.exited
	var ie *initError
	if s.killReason() != StatusTimeout {
		// Why the init could not take it, if it said (or, exited before
		// it read the spec, ran as this binary itself: errNotAnInit).
		if rep := s.awaitExec(c.statusR); errors.As(rep, &ie) || errors.Is(rep, errNotAnInit) {
			return rep
		}
	}
	return s.setupFailed(stage, err)
}

// setupFailed kills and reaps the init after a failed setup step; when
// the timeout killed it first, that is the cause.
func (s *Sandbox) setupFailed(stage string, err error) error {
	s.Kill()
	<-s.exited
	if s.killReason() == StatusTimeout {
		err = errSetupTimeout
	}
	return &policy.SetupError{Stage: stage, Err: err}
}

// startInit starts the init on its supervising thread (see supervise).
// tasks are the v1 tasks files it inherits from fd 5 (joinCgroupFD) on,
// then the reaper.
// With a spawn helper (and an init binary: the helper cannot re-execute
// the supervisor), the helper starts it.
func (s *Sandbox) startInit(specR, statusW *os.File, cgroupFD int, tasks []*os.File) error {
	s.cmd, s.pidfd = s.command(specR, statusW), -1
	s.cmd.ExtraFiles = append(s.cmd.ExtraFiles, tasks...)
	var report, helperEnd *os.File
	if s.spec.SpawnPath != "" && s.spec.InitPath != "" && !s.spec.Process {
		var err error
		if report, helperEnd, err = socketPair(); err != nil {
			return &policy.SetupError{Stage: "socketpair", Err: err}
		}
		defer report.Close()
		defer helperEnd.Close()
		var cgroup *os.File
		if cgroupFD >= 0 {
			// A copy the command owns (launch closes cgroupFD itself).
			fd, err := unix.FcntlInt(uintptr(cgroupFD), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				return &policy.SetupError{Stage: "cgroup placement", Err: err}
			}
			cgroup = os.NewFile(uintptr(fd), "cgroup")
			defer cgroup.Close()
		}
		s.cmd = s.spawnCommand(s.cmd, helperEnd, cgroup)
	} else if cgroupFD >= 0 {
		s.cmd.SysProcAttr.UseCgroupFD, s.cmd.SysProcAttr.CgroupFD = true, cgroupFD
	}
	s.exited = make(chan struct{})
	started := make(chan error, 1)
	go s.supervise(started, report, helperEnd, s.spec.Process)
	return <-started
}

// command builds the init's exec.Cmd: fresh namespaces from birth (every
// Go runtime thread of the init is in them), the uid/gid maps, a new
// session (no controlling tty, so no TIOCSTI into the caller's terminal),
// and SIGKILL when the supervising thread dies.
func (s *Sandbox) command(specR, statusW *os.File) *exec.Cmd {
	spec := s.spec
	cmd := exec.Command(or(spec.InitPath, "/proc/self/exe"))
	cmd.Args = []string{initArg0}
	// Only the init's own variables (launchabi.InitEnviron says which
	// and why): the supervisor's environment (secrets) never reaches the
	// init or the program.
	cmd.Env = launchabi.InitEnviron(BuildToken())
	cmd.ExtraFiles = []*os.File{specR, statusW} // fds 3 and 4
	cmd.Stdin = spec.Stdin
	stdout, stderr := s.outputs(spec)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if spec.TTY != nil {
		// A terminal's slave, the program's stdio: no capture, no pipes.
		cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.TTY, spec.TTY, spec.TTY
	} else if !spec.Process {
		cmd.Stdout, cmd.Stderr = s.outPipe(stdout), s.outPipe(stderr)
	}
	// Bounds the wait for a stdin copy that blocks, and for the process
	// backend's output, which its leader's children may still write.
	cmd.WaitDelay = 2 * time.Second
	uid, gid := hostIDs(spec)
	if spec.Process {
		// No namespaces: a session of its own (no controlling tty, its own
		// process group for the kill), never root.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if os.Getuid() == 0 {
			// CAP_SETPCAP kept across the uid change, the one the init
			// needs to drop its bounding set (and then every other).
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
			cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_SETPCAP}
		}
		return cmd
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  cloneFlags(spec),
		UidMappings: []syscall.SysProcIDMap{{ContainerID: spec.UID, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: spec.GID, HostID: gid, Size: 1}},
		// Take the mapped ids: when host root maps them to an unprivileged
		// id, the child must switch to it or it keeps an unmapped uid.
		Credential: &syscall.Credential{Uid: uint32(spec.UID), Gid: uint32(spec.GID), NoSetGroups: true},
		// An exec keeps capabilities only for uid 0 or as ambient ones:
		// every one, for the init's setup in its namespace (it drops them
		// all, ambient included, before the program).
		AmbientCaps: ambientCaps(spec.UID, s.lastCap),
		Setsid:      true,
		Pdeathsig:   syscall.SIGKILL,
	}
	return cmd
}

// supervise starts the init and waits for it on one locked OS thread:
// Pdeathsig fires when the thread that forked the child exits, so the
// thread must live exactly as long as the child (go.dev/issue/27505). The
// goroutine returns while still locked, which ends the thread.
//
// With a spawn helper (report is its socket), the start is done once the
// helper reports that the init was exec'd; a helper that failed is reaped
// before its error is returned.
//
// process (Spec.Process, read before: a prepared sandbox's spec is
// replaced at Start) makes it end the program's process group first.
//
// A helper its caller started (Adopt) is running already: s.cmd has its
// Process, and there is no helperEnd to close (the caller closed its
// copy). Its parent-death signal is bound to a thread of the caller's
// that never exits, so this goroutine need not hold one.
func (s *Sandbox) supervise(started chan<- error, report, helperEnd *os.File, process bool) {
	if s.cmd.Process == nil {
		runtime.LockOSThread()
		if process && s.reaper {
			// The init is born with the process backend's reaper's end
			// signal blocked (the mask is inherited), so that none is lost
			// before the reaper takes it (jailinit.ReaperEnd). This thread
			// ends with the init.
			end := unix.Sigset_t{}
			end.Val[(jailinit.ReaperEnd-1)/64] |= 1 << ((uint(jailinit.ReaperEnd) - 1) % 64)
			if err := unix.PthreadSigmask(unix.SIG_BLOCK, &end, nil); err != nil {
				started <- err
				close(s.exited)
				return
			}
		}
		err := s.cmd.Start()
		s.startOutput(err == nil)
		if err != nil {
			started <- err
			close(s.exited)
			return
		}
	}
	s.pid = s.cmd.Process.Pid
	if report != nil {
		// Our copy of the helper's end goes now: if the helper dies, the
		// read sees EOF.
		if helperEnd != nil {
			helperEnd.Close()
		}
		pid, pidfd, err := readSpawnReport(report, s.spec.InitPath)
		if err != nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
			s.drainOutput()
			if errors.Is(err, errSpawnDied) {
				err = fmt.Errorf("%w: %v", err, s.cmd.ProcessState)
			}
			started <- err
			close(s.exited)
			return
		}
		s.pid, s.pidfd = pid, pidfd
	}
	started <- nil
	// In the poller, not holding a P (awaitExit): endGroup's waitid and
	// the reap below then return at once.
	awaitExit(s.cmd.Process.Pid)
	if process && !s.reaper {
		s.endGroup() // before the reap below; a reaper kills what is left itself
	}
	s.waitErr = s.cmd.Wait()
	s.drainOutput()
	s.mu.Lock()
	closeFD(s.pidfd)
	s.pidfd = -1
	s.mu.Unlock()
	close(s.exited)
	s.releaseNamespaces()
}

// holdNamespaces keeps the sandbox's mount and network namespaces open
// until after its init is reaped. Without a holder the kernel tears them
// down inside the exit of pid 1 (an expedited RCU grace period for the
// mounts), before the exit is reported: half a millisecond of every
// result's latency here. With one, supervise drops them once the result
// is on its way. An optimisation only: failing to open them is ignored.
func (s *Sandbox) holdNamespaces() {
	var held []*os.File
	for _, ns := range []string{"mnt", "net"} {
		if f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", s.pid, ns)); err == nil {
			held = append(held, f)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited: // too late: it is gone (or going) already
		closeAll(held)
	default:
		s.held = held
	}
}

// releaseNamespaces closes what holdNamespaces held, on the calling
// goroutine: the teardown runs in this close.
func (s *Sandbox) releaseNamespaces() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	closeAll(held)
	s.dropEgressListener()
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// startError classifies a failed clone/exec of the init, here where the
// errno's meaning is known: the kernel refusing the sandbox's namespaces
// (disabled, limited to zero, restricted by an LSM) is the host's policy,
// an *UnsupportedError for CheckUserNS; anything else is a SetupError.
func startError(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EPERM, syscall.EACCES, syscall.ENOSPC, syscall.EINVAL, syscall.ENOSYS:
			return &policy.UnsupportedError{
				Control: "user namespaces",
				Check:   policy.CheckUserNS,
				Reason:  fmt.Sprintf("the kernel refused to start the sandbox's init in new namespaces (%v)", err),
				Fix:     "enable unprivileged user namespaces (sysctl user.max_user_namespaces>0; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile allowing userns); if they are enabled (airlock doctor), check that the airlock binary itself can be executed (the init re-executes it)",
			}
		}
	}
	return &policy.SetupError{Stage: "clone", Err: err}
}

func cloneFlags(spec *Spec) uintptr { return launchabi.CloneFlags(spec.HostNetwork) }

// ambientCaps is every capability the kernel knows (0 to last), for an
// init that is not uid 0 inside (nil for one that is).
func ambientCaps(uid, last int) []uintptr {
	if uid == 0 {
		return nil
	}
	caps := make([]uintptr, last+1)
	for c := range caps {
		caps[c] = uintptr(c)
	}
	return caps
}

// lastCap is the highest capability the kernel knows (cap_last_cap), or,
// where that cannot be read, the last this build knows: the init drops
// its bounding set up to it and fails unless the kernel agrees that it is
// the last (verifyNoCapabilities).
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	last, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil || last < 0 || last > 63 {
		return unix.CAP_LAST_CAP
	}
	return last
}

// reaperPath is the binary the init execs as the sandbox's pid 1
// (internal/jailinit/reaper_linux.go): the spawn helper, else this very
// binary where it holds the embedded reaper (cmd/airlock-spawn's, compiled in with cgo; its
// /proc/self/exe, the file this process runs even if its path was
// replaced since). With neither it is CheckReaper's error.
func reaperPath(spec *Spec) (string, error) {
	if err := CheckReaper(spec.SpawnPath); err != nil {
		return "", err
	}
	if spec.SpawnPath != "" {
		return spec.SpawnPath, nil
	}
	return "/proc/self/exe", nil
}

// CheckReaper says whether a sandbox started with spawnPath as its
// Spec.SpawnPath has a reaper to be its pid 1: the spawn helper, or the
// one this binary holds (EmbeddedReaper). Without either the program
// would be pid 1, whose own default-action signals the kernel drops: a
// policy.UnsupportedError naming the fix (a sandbox that must have no
// reaper says so: Spec.NoReaper).
func CheckReaper(spawnPath string) error {
	if spawnPath != "" || embeddedReaper {
		return nil
	}
	return &policy.UnsupportedError{Control: "pid 1 (the sandbox's reaper)",
		Reason: "this binary holds no reaper (one is built in only with cgo, on linux/amd64 and linux/arm64) and no spawn helper was given (SpawnPath): the program would be pid 1, whose own default-action signals the kernel drops",
		Fix:    "build with CGO_ENABLED=1 (and libseccomp-dev), or keep the airlock-spawn that scripts/build makes beside airlock (a library: set SpawnPath to it)"}
}

// EmbeddedReaper reports whether this binary holds the sandbox's reaper
// (cmd/airlock-spawn's, compiled in with cgo), which
// it then is for a sandbox started without a SpawnPath.
func EmbeddedReaper() bool { return embeddedReaper }

// hostIDs returns the host uid and gid the sandbox's ids map to: the
// caller's own when rootless, an unprivileged id when real root; never 0.
func hostIDs(spec *Spec) (int, int) {
	return launchabi.HostIDs(os.Getuid(), os.Getgid(), spec.HostUID, spec.HostGID)
}

func enforcedFor(spec *Spec) Enforced {
	uid, gid := hostIDs(spec)
	e := Enforced{
		Backend:      "namespaces",
		Namespaces:   []string{"user", "pid", "mount", "ipc", "uts", "cgroup"},
		UID:          spec.UID,
		GID:          spec.GID,
		UIDMap:       fmt.Sprintf("%d %d 1", spec.UID, uid),
		GIDMap:       fmt.Sprintf("%d %d 1", spec.GID, gid),
		Rootfs:       "pivot_root",
		Network:      "none",
		Limits:       "none",
		Seccomp:      "none",
		Capabilities: "none",
		NoNewPrivs:   true,
		Pid1:         "program",
	}
	if _, err := reaperPath(spec); err == nil && !spec.NoReaper {
		e.Pid1 = "reaper"
	}
	if spec.HostNetwork {
		e.Network = "host"
	} else {
		if spec.Egress != nil {
			e.Network, e.Egress = "allow", fmt.Sprintf("proxy 127.0.0.1:%d inside; %s", spec.EgressPort, spec.Egress)
		}
		e.Namespaces = append(e.Namespaces, "net")
	}
	if spec.Process {
		e.Backend, e.Namespaces, e.UIDMap, e.Rootfs, e.Network = "process", []string{}, fmt.Sprintf("none (host uid %d)", uid), "none (host filesystem)", "host"
		e.GIDMap, e.UID, e.GID = fmt.Sprintf("none (host gid %d)", gid), uid, gid
		e.Capabilities = processCapabilities(os.Getuid())
		if e.Pid1 == "reaper" {
			e.Pid1 = "subreaper"
		} else {
			e.Pid1 = ""
		}
		if spec.Landlock.ABI > 0 {
			e.Rootfs = "none (host filesystem, landlock rules)"
		}
		if spec.Landlock.Net {
			e.Network = "landlock"
		}
	}
	if spec.Timeout > 0 {
		e.Timeout = spec.Timeout.String()
	}
	e.Landlock = spec.Landlock.ABI
	if f := spec.Seccomp; f != nil {
		e.Seccomp, e.SeccompRules, e.SeccompInstructions = f.Profile, f.Rules, len(f.Program)
	}
	if spec.Cgroup != nil {
		e.Limits = spec.Cgroup.Backend()
		if l := spec.CgroupLimits; l != nil {
			e.Cgroup = &CgroupLimits{Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids}
		}
	}
	if len(spec.Rlimits) > 0 {
		e.Rlimits = map[string]uint64{}
		for _, r := range spec.Rlimits {
			e.Rlimits[RlimitName(r.Resource)] = r.Cur
			if r.Resource == unix.RLIMIT_DATA || r.Resource == unix.RLIMIT_NPROC {
				e.Limits = "rlimit" // memory or tasks bounded by rlimits
			}
		}
	}
	return e
}

// processCapabilities is the process backend's enforced.capabilities
// for a caller of uid: "none" where the init drops every set, the
// bounding set included (root gives it CAP_SETPCAP for that), or where
// the bounding set it inherits is empty already; else (rootless) the
// other sets are empty and the bounding set is the caller's. That is no
// privilege: it only bounds what an exec or a capset could add to an
// empty permitted set, and under no_new_privs no exec adds any (a setuid
// or file-capability binary grants nothing), nor does a capset beyond
// the permitted set. So it is said, not refused.
func processCapabilities(uid int) string {
	if uid == 0 {
		return "none"
	}
	bounding := false
	for c := 0; c <= lastCap(); c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil || in != 0 {
			bounding = true
			break
		}
	}
	if !bounding {
		return "none"
	}
	return "none held; bounding set not dropped (rootless: that needs CAP_SETPCAP); no_new_privs: no exec can raise any"
}

// RlimitName returns the name of an RLIMIT_* resource, e.g. "nofile".
func RlimitName(resource int) string {
	switch resource {
	case unix.RLIMIT_AS:
		return "as"
	case unix.RLIMIT_CORE:
		return "core"
	case unix.RLIMIT_CPU:
		return "cpu"
	case unix.RLIMIT_DATA:
		return "data"
	case unix.RLIMIT_FSIZE:
		return "fsize"
	case unix.RLIMIT_NOFILE:
		return "nofile"
	case unix.RLIMIT_NPROC:
		return "nproc"
	case unix.RLIMIT_STACK:
		return "stack"
	case unix.RLIMIT_MEMLOCK:
		return "memlock"
	}
	return fmt.Sprintf("rlimit%d", resource)
}

// initError is a failure the init reported: its message, and its errno
// (0 when none) for errors.Is.
type initError struct {
	msg   string
	errno syscall.Errno
}

func (e *initError) Error() string { return e.msg }

func (e *initError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// sendFiles sends files on a unix socket, in one message of one byte.
func sendFiles(sock *os.File, files []*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	rc, err := sock.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), []byte{0}, unix.UnixRights(fds...), nil, 0)
		return !errors.Is(serr, unix.EAGAIN)
	}); err != nil {
		return err
	}
	runtime.KeepAlive(files)
	return serr
}

// socketPair returns the two ends of a SOCK_SEQPACKET unix socket pair,
// both close-on-exec (ExtraFiles clears it for the child's copy). Ours,
// the first, is non-blocking and so read through the runtime's poller
// (awaitStatus, readSpawnReport): a goroutine that waits for the init
// parks and leaves the P to the others (the CLI has one), instead of
// holding it in a blocking recvmsg until sysmon takes it back, which with
// the CLI's timer slack takes up to 1 ms. The child's stays blocking.
func socketPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.SetNonblock(fds[0], true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "status"), os.NewFile(uintptr(fds[1]), "status-init"), nil
}

// listenerFD extracts the one fd of an SCM_RIGHTS control message.
func listenerFD(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("no fd in the listener message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("want one fd in the listener message: %v", err)
	}
	return fds[0], nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
