//go:build linux

package nsjail

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// Prepared is a sandbox built ahead of a request: its namespaces, root
// filesystem, hostname, loopback and cgroup placement are done, its init
// is confined (cgroup namespace, fds, capabilities, no_new_privs) and
// waits for the program. It runs the same init sequence as a cold start;
// only the program arrives later, with the request, which pays for the
// program's part (rlimits, working directory, seccomp, exec): little
// more than a bare exec.
//
// A Prepared sandbox runs one program, unless it recycles
// (Spec.Recycle): then it runs one program after another, each started
// once the last one's Wait returned and Reusable says it may. Close
// discards one that was never started, and a recycled one.
type Prepared struct {
	s      *Sandbox
	c      *initChannels
	stdinW *os.File // the program's stdin, fed at Start
	stdout *lateWriter
	stderr *lateWriter

	mu   sync.Mutex
	used bool // started (once) or closed; a recycled one: discarded
	busy bool // a recycled one: a run started, its Wait not returned
	runs int  // a recycled one: runs started
	// statusNB is the status socket, non-blocking, and status its raw
	// connection (a recycled one's runs: pollStatus).
	statusNB *os.File
	status   syscall.RawConn
	devNull  int // -1 until setupRuns
	// base is the cgroup's usage when the next run starts (a recycled
	// one: read at the end of the last run, or of the preparation).
	base cgroups.Stats
}

// ReaperSyscalls are the calls the sandbox's reaper makes under the
// program's filter when it waits for its program (Spec.ReaperWaits), and
// those the init makes after loading it (its report and the reaper's
// exec); a filter must allow each for a prepared sandbox to start its
// reaper ahead: with any arguments, but clone only as a plain fork
// (SIGCHLD, no other flag), which the default profile allows. The
// embedded reaper (a binary's own, without a SpawnPath: CheckReaper) is
// a dynamic executable: its exec adds what the dynamic loader and
// glibc's start call before the reaper runs (measured with strace on
// Debian 12's glibc 2.36; getrandom, faccessat and rt_sigaction for other
// versions and arm64).
var ReaperSyscalls = []string{"sendmsg", "execve", "rt_sigprocmask", "prctl", "fcntl", "pipe2", "mmap", "munmap", "read", "close",
	"clone", "setsid", "prlimit64", "chdir", "newfstatat", "write", "exit_group", "wait4", "sendto", "rt_sigtimedwait", "kill",
	"brk", "access", "faccessat", "openat", "pread64", "mprotect", "arch_prctl", "set_tid_address", "set_robust_list", "rseq",
	"getrandom", "rt_sigaction"}

// Bounds of the waiting reaper's program message (cmd/airlock-spawn:
// MAXMSG, MAXSTRS, MAXRLIMITS).
const (
	reaperMaxMsg     = 4 << 20
	reaperMaxStrings = 1 << 17
	reaperMaxRlimits = 16
)

// reaperFits reports whether the waiting reaper can take spec's program:
// within its bounds, and no NUL in a string (the init would refuse those
// at its exec with EINVAL; a cold start reports that as it always did).
func reaperFits(spec *Spec) bool {
	if len(spec.Args)+len(spec.Env) > reaperMaxStrings || len(spec.Rlimits) > reaperMaxRlimits || spec.TTY != nil {
		return false
	}
	size := len(or(spec.Dir, "/workspace")) + 64 + 24*len(spec.Rlimits)
	for _, l := range [][]string{spec.Args, spec.Env} {
		for _, a := range l {
			if strings.IndexByte(a, 0) >= 0 {
				return false
			}
			size += len(a) + binary.MaxVarintLen64
		}
	}
	return size <= reaperMaxMsg && strings.IndexByte(spec.Dir, 0) < 0
}

// Prepare builds a sandbox from spec up to, not including, its program.
// spec's program part (Args, Env, Dir, Rlimits, Seccomp, Timeout,
// CPUTime, the streams and OutputLimit) is ignored: it comes with each
// request to Start. Cancelling ctx aborts the preparation; it does not
// affect the prepared sandbox after Prepare returned.
func Prepare(ctx context.Context, spec Spec) (*Prepared, error) {
	if spec.Process {
		return nil, policy.Invalid("backend", "the process backend has no jail to prepare")
	}
	check := spec
	check.Args, check.Egress, check.EgressPort = []string{"prepare"}, nil, 0
	if err := check.validate(); err != nil {
		return nil, err
	}
	spec.Args, spec.Env, spec.Rlimits, spec.Egress = nil, nil, nil, nil
	if !spec.ReaperWaits {
		spec.Seccomp = nil // it comes with the request (build sends it ahead to a reaper that waits)
	}
	// Recycling needs a reaper that waits, a cgroup whose counters can
	// be reset between runs, and no egress proxy (its listener and log
	// are one run's); without them the sandbox serves one run.
	if spec.Recycle && (!spec.ReaperWaits || spec.Cgroup == nil || spec.EgressPort != 0 || spec.Cgroup.ResetPeak() != nil) {
		spec.Recycle = false
	}
	spec.Stdin, spec.Stdout, spec.Stderr = nil, nil, nil
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, &policy.SetupError{Stage: "pipe", Err: err}
	}
	p := &Prepared{stdinW: stdinW, stdout: &lateWriter{}, stderr: &lateWriter{}, devNull: -1}
	// The streams are the init's from its clone on; the request's own are
	// connected to them at Start.
	spec.Stdin, spec.Stdout, spec.Stderr = stdinR, p.stdout, p.stderr
	s := newSandbox(&spec)
	p.s = s
	c, err := s.launch()
	stdinR.Close()
	if err != nil {
		stdinW.Close()
		return nil, err
	}
	p.c = c
	// Cancelling ctx kills the init while it is being prepared; once
	// stop has returned true, it never will.
	stop := context.AfterFunc(ctx, func() { s.cancelled(ctx) })
	err = s.build(c, true)
	if err == nil && (s.recycle || s.live) {
		// Each run brings its own stdin (startRecycled).
		p.stdinW.Close()
		p.stdinW = nil
		if err = p.setupRuns(); err != nil {
			s.Kill()
			<-s.exited
			err = &policy.SetupError{Stage: "status", Err: err}
		}
	}
	if stop() && err == nil {
		// A request's usage counts from here: the cgroup holds the
		// preparation's already, and the idle init adds next to nothing.
		if g := spec.Cgroup; g != nil {
			if st, err := g.Stats(); err == nil {
				s.cpuBase, p.base = st.CPU, st
			} else if s.recycle {
				s.Kill()
				<-s.exited
				p.closeFiles()
				return nil, &policy.SetupError{Stage: "cgroup stats", Err: err}
			}
		}
		return p, nil
	}
	if err == nil {
		err = fmt.Errorf("nsjail: preparation cancelled: %w", ctx.Err())
		s.Kill()
		<-s.exited
	}
	p.closeFiles()
	return nil, err
}

// Pid returns the host pid of the prepared sandbox's init.
func (p *Prepared) Pid() int { return p.s.Pid() }

// Matches reports whether spec describes the sandbox p was prepared as
// (see SameJail), in the same cgroup. Only such a spec can be started in
// p; its filter, like the rest of its program, comes with it, except
// where p's reaper waits (Spec.ReaperWaits): that one runs under the
// preparation's filter already, so spec must have the same, and a
// program within the reaper's bounds.
func (p *Prepared) Matches(spec *Spec) bool {
	// (Its stdio are pipes made at its preparation: never a terminal.)
	if p.s.waits && !(SameFilter(p.s.spec.Seccomp, spec.Seccomp) && reaperFits(spec)) {
		return false
	}
	return SameJail(p.s.spec, spec) && p.s.spec.Cgroup == spec.Cgroup && spec.TTY == nil
}

// SameFilter reports whether two seccomp filters are the same program.
func SameFilter(a, b *seccomp.Filter) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Notify == b.Notify && slices.Equal(a.Program, b.Program)
}

// SameJail reports whether two specs build the same jail: filesystem
// plan and Landlock ruleset, network, hostname, identity, cgroup limits
// and init binary, on the namespaces backend. Their programs may differ.
func SameJail(a, b *Spec) bool {
	return !a.Process && !b.Process && reflect.DeepEqual(a.Plan, b.Plan) && reflect.DeepEqual(a.Landlock, b.Landlock) && a.HostNetwork == b.HostNetwork && a.EgressPort == b.EgressPort &&
		or(a.Hostname, "airlock") == or(b.Hostname, "airlock") && a.HostUID == b.HostUID && a.HostGID == b.HostGID &&
		a.UID == b.UID && a.GID == b.GID &&
		reflect.DeepEqual(a.CgroupLimits, b.CgroupLimits) && a.InitPath == b.InitPath && a.SpawnPath == b.SpawnPath && a.NoReaper == b.NoReaper
}

var errUsed = policy.Invalid("prepared sandbox", "already used or closed: a prepared sandbox runs one program")

// Start runs spec's program in the prepared sandbox and returns once it
// was exec'd. spec must match the preparation (see Matches); its
// Timeout counts from now. Cancelling ctx kills the sandbox.
func (p *Prepared) Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if !p.Matches(&spec) {
		return nil, policy.Invalid("prepared sandbox", "the spec differs from the one the sandbox was prepared with")
	}
	if p.s.recycle {
		return p.startRecycled(ctx, spec)
	}
	if swapUsed(&p.mu, &p.used) {
		return nil, errUsed
	}
	s := p.s
	defer p.closeFiles()
	select {
	case <-s.exited:
		return nil, &policy.SetupError{Stage: "init", Err: errors.New("the prepared sandbox's init died while it waited")}
	default:
	}
	// The request's spec replaces the preparation's (they agree on the
	// jail); the watchers started below and Wait read it.
	stdin := spec.Stdin
	spec.Stdin = nil
	s.mu.Lock()
	s.spec, s.enforced = &spec, enforcedFor(&spec)
	s.mu.Unlock()
	out, errw := s.outputs(&spec)
	p.stdout.set(out)
	p.stderr.set(errw)
	// The request's phases, the init's marks of its program part
	// included, count from here.
	s.start, s.startNS = time.Now(), monotonicNS()
	s.runStart = s.start
	go s.watch(ctx)
	stdinW := p.stdinW
	p.stdinW = nil
	if stdin == nil {
		stdinW.Close()
	} else {
		// Ends when stdin does, or when the program is gone (EPIPE).
		go func() {
			io.Copy(stdinW, stdin)
			stdinW.Close()
		}()
	}
	if err := s.run(p.c); err != nil {
		return nil, err
	}
	return s, nil
}

// Run is Start and Wait.
func (p *Prepared) Run(ctx context.Context, spec Spec) (*Result, error) {
	t0 := time.Now()
	sb, err := p.Start(ctx, spec)
	return waitStarted(t0, &spec, sb, err)
}

// Close discards a prepared sandbox that was never started: its init is
// killed and reaped. The caller removes its cgroup. After Start, Close
// does nothing.
func (p *Prepared) Close() error {
	if p.s.recycle {
		p.discard()
		return nil
	}
	if swapUsed(&p.mu, &p.used) {
		return nil
	}
	p.s.Kill()
	<-p.s.exited
	p.closeFiles()
	return nil
}

func (p *Prepared) closeFiles() {
	p.c.close()
	if p.statusNB != nil {
		p.statusNB.Close()
	}
	p.mu.Lock()
	if p.devNull >= 0 {
		unix.Close(p.devNull)
		p.devNull = -1
	}
	p.mu.Unlock()
	if p.stdinW != nil {
		p.stdinW.Close()
	}
}

// lateWriter is a prepared sandbox's output stream: it is connected to
// the request's writer at Start. Nothing is written before (the init
// writes only to its status socket); anything that is, is dropped.
type lateWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lateWriter) set(w io.Writer) {
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
}

func (l *lateWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	w := l.w
	l.mu.Unlock()
	if w == nil {
		return len(b), nil
	}
	return w.Write(b)
}
