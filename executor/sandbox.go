package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// A live sandbox (NewSandbox) outlives a run: it keeps its namespaces,
// its pid 1, its /workspace (a tmpfs of its own, bounded by the policy's
// workspace_size) and one cgroup that bounds all its processes together,
// and any number of processes enter it (Exec, Run), in the foreground or
// the background, until it is closed, idles out or reaches its lifetime.
// How a process enters: nsjail.Live (pid 1 starts it as its own child,
// so it inherits every control pid 1 has; nothing is re-applied, nothing
// joins namespaces from outside).

// SandboxConfig configures a live sandbox.
type SandboxConfig struct {
	// Policy is the jail. Its Workspace must be "": the sandbox's
	// /workspace is a tmpfs of its own (Policy.WorkspaceSize bounds it).
	Policy policy.Policy
	// Files are written into /workspace before NewSandbox returns.
	Files map[string][]byte
	// Env is added to every process's environment (a process's own Env
	// overrides it).
	Env map[string]string
	// IdleTimeout closes the sandbox after this long with no call on it.
	// 0 = 5 minutes; negative = never.
	IdleTimeout time.Duration
	// Timeout is the sandbox's lifetime from its creation (SetTimeout
	// moves it). 0 = 1 hour.
	Timeout time.Duration
	// Metadata is opaque to airlock, returned by Info.
	Metadata map[string]string
	// MaxProcesses bounds the processes started through Exec and Run
	// that run at once (0 = no bound beyond the policy's pids limit): one
	// past it is refused with ErrSandboxFull, whose place is held from the
	// check to its end, so concurrent starts cannot pass it together.
	MaxProcesses int
}

// ErrSandboxFull refuses a process past SandboxConfig.MaxProcesses: a
// transient shortage (errors.Is ErrUnavailable): retry once one ends.
var ErrSandboxFull error = &sandboxFull{}

type sandboxFull struct{}

func (*sandboxFull) Error() string {
	return "executor: the sandbox runs its most processes at once (SandboxConfig.MaxProcesses); wait for one to end or kill one"
}
func (*sandboxFull) Is(target error) bool { return target == policy.ErrUnavailable }

// Errors a closed sandbox's methods return (Sandbox.Err says which): all
// of class invalid, not retryable, and distinguishable with errors.Is.
var (
	ErrSandboxClosed  = policy.Invalid("sandbox", "closed")
	ErrSandboxTimeout = policy.Invalid("sandbox", "ended: its lifetime (timeout) ran out")
	ErrSandboxIdle    = policy.Invalid("sandbox", "ended: idle past its idle timeout")
)

// liveMaxEnded bounds the ended processes a sandbox remembers (Processes).
const liveMaxEnded = 64

// Sandbox is a live sandbox. Safe for concurrent use.
type Sandbox struct {
	e        *Executor
	id       string
	cfg      SandboxConfig
	pol      policy.Policy
	enf      policy.Enforcement
	live     *nsjail.Live
	group    cgroups.Group // nil without cgroup limits
	enforced nsjail.Enforced
	rl       []nsjail.Rlimit
	env      map[string]string // every process's base environment
	files    *sandboxFiles
	created  time.Time
	done     chan struct{}

	mu       sync.Mutex
	err      error // why it ended; nil while open
	expires  time.Time
	lifetime *time.Timer
	idle     *time.Timer
	idleFor  time.Duration
	holds    int // Hold's callers not yet released: the idle timer stopped
	paused   bool
	procs    map[int]*Process // running, by pid
	starting int              // processes past the MaxProcesses check, not yet in procs
	maxProcs int
	ended    []*Process // the last liveMaxEnded that ended, oldest first
	codes    int        // code files written (Language+Code)
}

// SandboxInfo describes a live sandbox.
type SandboxInfo struct {
	ID            string             `json:"id"`
	State         string             `json:"state"` // running | paused | closed
	CreatedAt     time.Time          `json:"created_at"`
	ExpiresAt     time.Time          `json:"expires_at"`
	IdleTimeoutMS int64              `json:"idle_timeout_ms"`
	Metadata      map[string]string  `json:"metadata,omitempty"`
	Processes     int                `json:"processes"`
	Enforced      policy.Enforcement `json:"enforced"`
	Memory        int64              `json:"memory_bytes"`
	Workspace     WorkspaceUsage     `json:"workspace"`
	// Network is the egress proxy's connection log so far (net allow),
	// NetworkDropped the entries past its cap.
	Network        []egress.Conn `json:"network,omitempty"`
	NetworkDropped int           `json:"network_dropped,omitempty"`
}

// WorkspaceUsage is a tmpfs workspace's use and size, in bytes.
type WorkspaceUsage struct {
	Used  int64 `json:"used_bytes"`
	Limit int64 `json:"limit_bytes"`
}

// liveCalls are the calls a live sandbox's pid 1 makes under the
// sandbox's filter: the reaper's and its request loop's.
var liveCalls = append(slices.Clone(nsjail.ReaperSyscalls), nsjail.LiveSyscalls...)

// NewSandbox creates a live sandbox. The policy is checked as a run's
// is (a control the host cannot enforce is refused, unless best_effort
// names it); a live sandbox also needs the namespaces backend, a reaper
// (always there in a cgo build: nsjail.CheckReaper) and, under a custom
// seccomp profile, one that allows the calls its pid 1 makes.
func (e *Executor) NewSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, error) {
	p := cfg.Policy
	if p.Workspace != "" {
		return nil, policy.Invalid("workspace", "a live sandbox's /workspace is a tmpfs of its own; leave policy.workspace empty (workspace_size bounds it)")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if e.isClosed() {
		return nil, errClosed
	}
	enf, err := e.check(&p)
	if err != nil {
		return nil, err
	}
	switch {
	case enf.Process():
		return nil, &policy.UnsupportedError{Control: "live sandbox", Reason: "a live sandbox needs the namespaces backend (a pid 1 of its own); this host or policy gives the process backend",
			Fix: "enable unprivileged user namespaces (airlock doctor says how), or use one-shot runs (/v1/run, airlock run) on the process backend"}
	case !reaperMayWait(p.Seccomp, liveCalls):
		return nil, policy.Invalid("seccomp", "a live sandbox's pid 1 makes these calls under the filter, which this profile may deny: %s", strings.Join(liveCalls, ", "))
	}
	if err := nsjail.CheckReaper(e.cfg.SpawnPath); err != nil {
		return nil, err
	}
	spec, err := e.resolve(Request{Args: []string{"true"}, Policy: p}, enf)
	if err != nil {
		return nil, err
	}
	var g cgroups.Group
	var live *nsjail.Live
	if pl := e.live.take(&spec); pl != nil {
		live, g = pl.live, pl.g
	} else {
		if spec.CgroupLimits != nil {
			if g, err = e.groups.take(*spec.CgroupLimits); err != nil {
				return nil, &policy.SetupError{Stage: "cgroup", Err: err}
			}
			// One process out of memory ends that process, not the sandbox.
			if err := cgroups.KillOneOnOOM(g); err != nil {
				e.groups.release(g)
				return nil, &policy.SetupError{Stage: "cgroup", Err: err}
			}
			spec.Cgroup = g
		}
		if live, err = nsjail.PrepareLive(ctx, spec); err != nil {
			if g != nil {
				e.groups.release(g)
			}
			return nil, err
		}
	}
	s := &Sandbox{e: e, id: newSandboxID(), cfg: cfg, pol: p, enf: enf, live: live, group: g, enforced: live.Enforced(),
		rl: spec.Rlimits, created: time.Now(), done: make(chan struct{}), procs: map[int]*Process{}}
	s.enforced.Timeout = ""
	record(&nsjail.Result{Enforced: s.enforced}, enf)
	s.env = map[string]string{}
	for _, kv := range environment(p) {
		k, v, _ := strings.Cut(kv, "=")
		s.env[k] = v
	}
	maps.Copy(s.env, cfg.Env)
	if s.files, err = openSandboxFiles(ctx, live); err != nil {
		s.closeWith(err)
		return nil, err
	}
	for name, data := range cfg.Files {
		if _, err := s.files.write(name, strings.NewReader(string(data)), 0o644); err != nil {
			s.closeWith(err)
			return nil, err
		}
	}
	// Timers before the sandbox is reachable (s.mu orders their
	// assignment before every use).
	s.mu.Lock()
	s.idleFor, s.maxProcs = cfg.IdleTimeout, cfg.MaxProcesses
	if s.idleFor == 0 {
		s.idleFor = 5 * time.Minute
	}
	if s.idleFor > 0 {
		s.idle = time.AfterFunc(s.idleFor, func() {
			s.mu.Lock()
			held := s.holds > 0 // a Hold that came as the timer fired
			s.mu.Unlock()
			if !held {
				s.closeWith(ErrSandboxIdle)
			}
		})
	}
	life := cfg.Timeout
	if life <= 0 {
		life = time.Hour
	}
	s.expires = s.created.Add(life)
	s.lifetime = time.AfterFunc(life, func() { s.closeWith(ErrSandboxTimeout) })
	s.mu.Unlock()
	// pid 1's own death (an OOM kill of it, a kill from outside) ends it.
	go func() {
		select {
		case <-live.Done():
			err := live.Err()
			if err == nil {
				err = &policy.SetupError{Stage: "sandbox", Err: errors.New("its pid 1 ended")}
			}
			s.closeWith(err)
		case <-s.done:
		}
	}()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		s.closeWith(errClosed)
		return nil, errClosed
	}
	if e.sandboxes == nil {
		e.sandboxes = map[string]*Sandbox{}
	}
	e.sandboxes[s.id] = s
	e.mu.Unlock()
	return s, nil
}

func newSandboxID() string {
	var b [10]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Sandboxes returns the open live sandboxes, oldest first.
func (e *Executor) Sandboxes() []*Sandbox {
	e.mu.Lock()
	out := slices.Collect(maps.Values(e.sandboxes))
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// Sandbox returns the open live sandbox id, or nil.
func (e *Executor) Sandbox(id string) *Sandbox {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sandboxes[id]
}

// HostPID is the host pid of the sandbox's pid 1.
func (s *Sandbox) HostPID() int { return s.live.Pid() }

// ID is the sandbox's id: 20 random hex digits.
func (s *Sandbox) ID() string { return s.id }

// Done is closed once the sandbox ended, for any reason.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Err says why the sandbox ended: nil while it is open; ErrSandboxClosed,
// ErrSandboxTimeout, ErrSandboxIdle, or the failure that ended it.
func (s *Sandbox) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// open returns nil, or why the sandbox cannot be used; it resets the
// idle timer.
func (s *Sandbox) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.idle != nil && s.holds == 0 {
		s.idle.Reset(s.idleFor)
	}
	return nil
}

// Touch resets the idle timer (every call on the sandbox does).
func (s *Sandbox) Touch() { s.open() }

// Hold keeps the sandbox from idling out until release is called: a
// client attached to it (following a process's output, at its terminal,
// through a tunnel to its port) is using it, however quiet the process
// or the connection. Release starts the idle timeout anew; it may be
// called more than once. The lifetime still holds.
func (s *Sandbox) Hold() (release func()) {
	s.mu.Lock()
	s.holds++
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.holds--
			if s.holds == 0 && s.idle != nil && s.err == nil {
				s.idle.Reset(s.idleFor)
			}
			s.mu.Unlock()
		})
	}
}

// SetTimeout sets the sandbox's lifetime to end d from now.
func (s *Sandbox) SetTimeout(d time.Duration) error {
	if d <= 0 {
		return policy.Invalid("timeout", "must be positive")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.expires = time.Now().Add(d)
	s.lifetime.Reset(d)
	return nil
}

// Info describes the sandbox.
func (s *Sandbox) Info() SandboxInfo {
	info := SandboxInfo{ID: s.id, CreatedAt: s.created, Metadata: s.cfg.Metadata, Enforced: s.enf}
	if s.group != nil {
		if m, err := cgroups.MemoryCurrent(s.group); err == nil {
			info.Memory = m
		}
	}
	info.Workspace = s.files.usage()
	info.Network, info.NetworkDropped = s.live.Network()
	s.mu.Lock()
	defer s.mu.Unlock()
	info.ExpiresAt, info.IdleTimeoutMS, info.Processes = s.expires, s.idleFor.Milliseconds(), len(s.procs)
	switch {
	case s.err != nil:
		info.State = "closed"
	case s.paused:
		info.State = "paused"
	default:
		info.State = "running"
	}
	return info
}

// Close ends the sandbox: every process in it is killed (with its pid
// 1), its cgroup and workspace removed. Idempotent.
func (s *Sandbox) Close() error {
	s.closeWith(ErrSandboxClosed)
	return nil
}

// closeWith ends the sandbox once, for reason.
func (s *Sandbox) closeWith(reason error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		// Another caller's teardown (its idle timeout, its lifetime, pid
		// 1's end) is under way: this one returns once it is over, so that
		// Close, and the Executor's Close after it, find nothing of the
		// sandbox left (CI's TestSessions of 2026-12-02 saw an idled-out
		// sandbox's cgroup half removed after the Executor's Close).
		<-s.done
		return
	}
	s.err = reason
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.lifetime != nil {
		s.lifetime.Stop()
	}
	paused := s.paused
	s.mu.Unlock()
	if paused && s.group != nil {
		// A frozen task cannot die: thaw first (the kill is pending).
		s.group.Kill()
		cgroups.Freeze(s.group, false)
	}
	s.live.Close() // pid 1 and with it every process of its namespace
	if s.files != nil {
		s.files.close()
	}
	if s.group != nil {
		// At once, not in the background as a run's: Close removes
		// everything of the sandbox before it returns.
		s.e.groups.remove(s.group)
	}
	s.e.mu.Lock()
	delete(s.e.sandboxes, s.id)
	s.e.mu.Unlock()
	close(s.done)
}

// Pause freezes every process of the sandbox (the cgroup freezer): they
// keep their memory and state, and run on at Resume. Refused where the
// host has no freezer for the sandbox's cgroup, or it has none.
func (s *Sandbox) Pause() error  { return s.freeze(true) }
func (s *Sandbox) Resume() error { return s.freeze(false) }

func (s *Sandbox) freeze(on bool) error {
	if err := s.open(); err != nil {
		return err
	}
	if s.group == nil {
		return &policy.UnsupportedError{Control: "pause", Reason: "the sandbox has no cgroup of its own (its limits are rlimits), so no freezer can hold its processes", Fix: "run airlock where it has a delegated cgroup (cgroup v2, or root on cgroup v1 with a freezer hierarchy)"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused == on {
		return nil
	}
	if err := cgroups.Freeze(s.group, on); err != nil {
		return &policy.SetupError{Stage: "freezer", Err: err}
	}
	s.paused = on
	return nil
}
