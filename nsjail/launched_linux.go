package nsjail

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// Launched is a sandbox's init started ahead of the rest of its spec
// (Launch): the spawn helper clones its namespaces and execs it while the
// caller still resolves the policy, compiles or loads the filter and
// makes the cgroup; Start then sends it its jail and program as a cold
// Start does. A one-shot process (the CLI) saves the overlap, about half
// a millisecond of each run's latency here (docs/performance.md), and no
// CPU.
//
// Only the launch part of the spec is fixed at Launch (LaunchFits lists
// it); the init waits for everything else, and no untrusted code runs
// before Start. Without a cgroup at its start, the init joins its run's
// cgroup at Start: on cgroup v1 it is sent the tasks files and moves
// itself before building the jail, as a cold init does; on v2 the group
// adopts it by pid, which waits for an RCU grace period, so a caller on
// a v2 host (where a cold init is born in its cgroup) gains nothing and
// should start cold. The timeout and the wall time count from Start, as
// a cold one's from its clone.
//
// A Launched serves one Start. Close kills and reaps an init that was
// not started; the caller must call it on every path (after Start it
// does nothing). If the caller dies, the init dies with it, as a cold
// one does.
type Launched struct {
	s      *Sandbox
	launch Spec          // what the init was launched with (LaunchFits)
	ready  chan struct{} // closed once launch returned
	c      *initChannels // launch's result, once ready
	err    error

	mu   sync.Mutex
	used bool
}

// Launch starts the init for spec and returns at once; the init's start
// goes on in the background. Of spec it reads only the launch part (see
// LaunchFits), checked as Start checks it. It refuses what it cannot
// launch ahead: the process backend, a terminal (Spec.TTY), and streams
// that are no files (a stdin copy would begin before Start, and a
// caller that falls back to a cold start would lose what it read; only
// files compare safely in LaunchFits).
func Launch(spec Spec) (*Launched, error) {
	launch, err := launchPart(spec)
	if err != nil {
		return nil, err
	}
	s := newSandbox(&launch)
	l := &Launched{s: s, launch: launch, ready: make(chan struct{})}
	go func() {
		l.c, l.err = s.launch()
		close(l.ready)
	}()
	// Let the launch run now, up to its wait for the spawn helper's
	// report: with one P (the CLI's GOMAXPROCS) the new goroutine would
	// otherwise wait for the caller's next block, late in its setup.
	runtime.Gosched()
	return l, nil
}

// launchPart checks what Launch and Adopt fix of spec, as Start checks
// it, and returns that part alone (LaunchFits compares it).
func launchPart(spec Spec) (Spec, error) {
	if spec.Process || spec.TTY != nil || spec.SpawnPath == "" || spec.InitPath == "" {
		return Spec{}, policy.Invalid("launch", "only a sandbox with namespaces, a spawn helper and an init binary, without a terminal, launches ahead")
	}
	if !fileOrNil(spec.Stdin) || !fileOrNil(spec.Stdout) || !fileOrNil(spec.Stderr) {
		return Spec{}, policy.Invalid("launch", "the streams of a sandbox launched ahead are files or none")
	}
	// validate's checks of the ids and the output cap (Process: it has no
	// plan to check yet).
	check := Spec{Args: []string{"launch"}, Process: true, UID: spec.UID, GID: spec.GID, HostUID: spec.HostUID, HostGID: spec.HostGID, OutputLimit: spec.OutputLimit}
	if err := check.validate(); err != nil {
		return Spec{}, err
	}
	return Spec{InitPath: spec.InitPath, SpawnPath: spec.SpawnPath, NoReaper: spec.NoReaper, HostNetwork: spec.HostNetwork,
		UID: spec.UID, GID: spec.GID, HostUID: spec.HostUID, HostGID: spec.HostGID,
		Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr, LimitStreams: spec.LimitStreams, OutputLimit: spec.OutputLimit, Logger: spec.Logger}, nil
}

// fileOrNil reports whether a stream is nil or an *os.File.
func fileOrNil(v any) bool {
	if v == nil {
		return true
	}
	_, ok := v.(*os.File)
	return ok
}

// LaunchFits reports whether spec starts the init l launched: the same
// binaries, namespaces, ids, streams and output cap. Anything
// else (the jail, the filter, the cgroup, the program, the limits) comes
// with Start.
func (l *Launched) LaunchFits(spec *Spec) bool {
	a := &l.launch
	return !spec.Process && spec.TTY == nil && a.InitPath == spec.InitPath && a.SpawnPath == spec.SpawnPath && a.NoReaper == spec.NoReaper &&
		a.HostNetwork == spec.HostNetwork && a.UID == spec.UID && a.GID == spec.GID && a.HostUID == spec.HostUID && a.HostGID == spec.HostGID &&
		a.Stdin == spec.Stdin && a.Stdout == spec.Stdout && a.Stderr == spec.Stderr &&
		a.LimitStreams == spec.LimitStreams && a.OutputLimit == spec.OutputLimit
}

// Usable waits for l's init to be started and reports whether spec can
// run in it: it started, is still waiting, was not used, and spec fits
// (LaunchFits). A caller that gets false closes l and starts cold.
func (l *Launched) Usable(spec *Spec) bool {
	<-l.ready
	l.mu.Lock()
	used := l.used
	l.mu.Unlock()
	if l.err != nil || used || !l.LaunchFits(spec) {
		return false
	}
	select {
	case <-l.s.exited:
		return false
	default:
		return true
	}
}

// Pid returns the host pid of l's init, waiting for its start; 0 if its
// start failed.
func (l *Launched) Pid() int {
	<-l.ready
	if l.err != nil {
		return 0
	}
	return l.s.Pid()
}

// Start runs spec in l: it sends the init its cgroup, jail and program,
// and returns once the program was exec'd, as Start does for a cold
// sandbox. spec must fit (Usable); its Timeout counts from now.
func (l *Launched) Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	<-l.ready
	if l.err != nil {
		return nil, l.err
	}
	if !l.LaunchFits(&spec) {
		return nil, policy.Invalid("launched sandbox", "the spec differs from the one the init was launched with")
	}
	if swapUsed(&l.mu, &l.used) {
		return nil, errLaunchUsed
	}
	s, c := l.s, l.c
	defer c.close()
	select {
	case <-s.exited:
		return nil, &policy.SetupError{Stage: "init", Err: errors.New("the launched init died while it waited for its spec")}
	default:
	}
	// The run's spec replaces the launch's (they agree on every field
	// launch read); build, the watchers and Wait read it.
	s.mu.Lock()
	s.spec, s.enforced = &spec, enforcedFor(&spec)
	s.mu.Unlock()
	if spec.Logger != nil {
		s.log = spec.Logger
	}
	// The timeout and the wall time count from here, as a cold Start's
	// count from its clone: the caller's setup since the launch is not
	// the program's. (The phases keep the launch as their base.)
	s.runStart = time.Now()
	s.phase("ahead") // the run is in the init launched ahead
	return s.startCold(ctx, c)
}

// swapUsed marks *used, under mu, and reports whether it was already:
// a prepared or launched sandbox serves one Start, or one Close.
func swapUsed(mu *sync.Mutex, used *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	was := *used
	*used = true
	return was
}

var errLaunchUsed = policy.Invalid("launched sandbox", "already used or closed: a launched init runs one program")

// Run is Start and Wait.
func (l *Launched) Run(ctx context.Context, spec Spec) (*Result, error) {
	t0 := time.Now()
	sb, err := l.Start(ctx, spec)
	return waitStarted(t0, &spec, sb, err)
}

// Close kills and reaps an init that was not started (or is still
// being started), and closes its channels. After Start it does nothing.
func (l *Launched) Close() error {
	if swapUsed(&l.mu, &l.used) {
		return nil
	}
	<-l.ready
	if l.err != nil {
		return nil
	}
	l.s.Kill()
	<-l.s.exited
	l.c.close()
	return nil
}
