package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/hostprobe"
	"github.com/airlock-sandbox/airlock/rootfs"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// The error classes, re-exported from policy.
var (
	ErrInvalid     = policy.ErrInvalid
	ErrUnsupported = policy.ErrUnsupported
	ErrUnavailable = policy.ErrUnavailable
)

// Result is the outcome of one execution: the jail's result (see
// nsjail.Result; its JSON fields are airlock's result contract) plus the
// language and the files the program left in /workspace when asked for.
type Result struct {
	nsjail.Result
	Language string `json:"language,omitempty"`
	Files    []File `json:"files,omitempty"`
}

// Config configures an Executor. The zero value is usable.
type Config struct {
	// Logger receives lifecycle events, never payload data. nil = discard.
	Logger *slog.Logger
	// InitPath is the binary re-executed as the sandbox init; it must call
	// nsjail.Init first thing in main. "" = /proc/self/exe. A daemon can
	// ship cmd/airlock-init, built with CGO_ENABLED=0 from the same
	// module version, and point this at it: with no C runtime and less Go
	// to start, every cold sandbox starts about 0.6 ms sooner here
	// (README, Performance). Built with a build token (scripts/build), it
	// refuses a caller built with another.
	InitPath string
	// SpawnPath is cmd/airlock-spawn (static C, built by scripts/build):
	// with an InitPath, it creates each sandbox's namespaces, so this
	// process is never forked. A fork copies the caller's page tables and
	// makes it take a copy-on-write fault on each page it writes next: a
	// cost that grows with the caller's memory (README, Performance).
	// "" = this process forks the init itself. With or without an
	// InitPath it is also each sandbox's pid 1, a reaper whose child the
	// program is, so that signals it sends itself and its wait status are
	// as bare; "" = the program is pid 1 (Result.Enforced.Pid1).
	SpawnPath string
	// CgroupParent is the cgroup (a path as in /proc/self/cgroup) under
	// which per-run cgroups are made. "" = discovered: this process's own
	// cgroup, delegated on v2, or its own v1 cgroups as root. A parent
	// that holds processes cannot have the controllers enabled for its
	// children (cgroup v2's "no internal processes" rule), so a
	// discovered v2 cgroup is usable only when this process already
	// lives in a leaf named airlock-supervisor inside it (per-run groups
	// are then made beside the leaf), when it holds no process, or with
	// CgroupMoveSelf. Without a usable cgroup, explicit limits are
	// refused and the defaults fall back to rlimits (see policy.Check).
	CgroupParent string
	// CgroupMoveSelf allows New, on cgroup v2 when CgroupParent is ""
	// and this process's own cgroup holds processes, to move this whole
	// process (every thread of the daemon linking airlock) into
	// <own>/airlock-supervisor, so that per-run cgroups can be made
	// beside it. It is a change to the host process that outlives the
	// Executor; it is never done when CgroupParent is set, nor on cgroup
	// v1. false (the default) = never move: a daemon decides where it
	// lives. The airlock CLI sets it: a one-shot process acting for its
	// caller, with nothing else in its cgroup to disturb.
	CgroupMoveSelf bool
	// SeccompCacheDir, if set, keeps compiled seccomp filters on disk
	// between processes (a CLI compiles its filter once, not per run). It
	// is used only while it and its files belong to this user and are not
	// writable by others. "" = in-memory caching only.
	SeccompCacheDir string
	// Pool keeps sandboxes prepared ahead of requests (see PoolConfig).
	// The zero value has no pool.
	Pool PoolConfig
	// TimerSlack is the timer slack, in ns, each program starts with
	// (nsjail.Spec.TimerSlack). 0 = this process's, as a child of it
	// would inherit. A caller that raised its own for its runtime's sake
	// (the airlock CLI) passes the one it was started with.
	TimerSlack uint64
	// SetSignals makes each program start with exactly SignalsIgnored
	// ignored (bit n-1 for signal n) and every other signal at its
	// default (nsjail.Spec.SetSignals): a CLI passes the dispositions it
	// was started with, which its runtime's handlers hide from its
	// children. It also lets a cold sandbox start before the caller's
	// ProgramGate opens: what the init inherits no longer matters. With
	// it, SignalsBlocked are the signals each program starts with
	// blocked (its signal mask), else the mask a child of this process's
	// main thread would get.
	SetSignals     bool
	SignalsIgnored uint64
	SignalsBlocked uint64
	// WorkDir is where workspaces for code, files and sessions are made.
	// "" = the system temp directory. Put it on a size-limited filesystem
	// to bound what a program can write there.
	WorkDir string
}

// Executor runs requests in sandboxes. It holds no per-run state (only a
// cache of compiled seccomp filters) and is safe for concurrent use by
// many goroutines.
type Executor struct {
	cfg      Config
	notify   bool   // kill rules name their syscall (user notification)
	self     string // identity of this binary, for the on-disk cache
	noReaper bool   // the program is pid 1 even with a SpawnPath (tests' A/B only)

	// host is what this host can enforce for this Executor: the probe,
	// with the cgroup check replaced by the outcome of setting up its
	// own parent. Every request is judged against it by policy.Check.
	host    *policy.Host
	cgroups *cgroups.Parent // where per-run cgroups go; nil = none usable
	groups  *groups         // cold runs' groups: a spare made ahead, removals in the background

	// langs returns the installed languages, by name and alias, detected
	// at its first call (a sync.OnceValue), not in New, so that a run of
	// a program (the CLI's run) never stats every interpreter's path.
	langs func() map[string]Language
	pool  *pool     // prepared sandboxes; nil = none
	live  *livePool // prepared live sandboxes; nil = none

	compiles atomic.Int64 // filters compiled (not found compiled ahead or cached), for the tests

	mu       sync.Mutex
	filters  map[string]*seccomp.Filter // compiled, by profile hash
	sessions map[*Session]bool
	// sandboxes are the open live sandboxes, by id (nil until the first).
	sandboxes map[string]*Sandbox
	closed    bool
}

// New returns an Executor. It probes the host (policy/hostprobe) and sets
// up the cgroup parent: on cgroup v2 it enables the memory, cpu and pids
// controllers for the parent's children, and it removes the groups of
// supervisors that died mid-run (their names say whose they were). It
// moves this process only with Config.CgroupMoveSelf.
func New(cfg Config) (*Executor, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	host := hostprobe.Probe(hostprobe.Options{NoCgroup: true})
	e := &Executor{cfg: cfg, host: host, notify: host.Has(policy.CheckSeccompNotify), langs: sync.OnceValue(detectLanguages),
		filters: map[string]*seccomp.Filter{}, sessions: map[*Session]bool{}}
	if cfg.SeccompCacheDir != "" {
		e.self = selfID()
	}
	// The cgroup check is the outcome of setting up this Executor's own
	// parent.
	var err error
	cg := policy.Capability{ID: policy.CheckCgroup, Name: "cgroup limits"}
	if e.cgroups, err = cgroups.Find(cfg.CgroupParent, cfg.CgroupMoveSelf); err != nil {
		cg.Detail = err.Error()
		var u *policy.UnsupportedError
		if errors.As(err, &u) {
			cg.Detail, cg.Fix = u.Reason, u.Fix
		}
	} else {
		cg.OK, host.Limits = true, e.cgroups.Backend()
		cg.Detail = fmt.Sprintf("mode %s: %s under %s", host.CgroupMode, e.cgroups.Backend(), e.cgroups.Dir())
		// Groups left by a supervisor that died mid-run (SIGKILL) go now.
		if n, err := e.cgroups.ReapStale(); n > 0 || err != nil {
			cfg.Logger.Info("reaped stale cgroups", slog.Int("count", n), slog.Any("error", err))
		}
		e.groups = &groups{parent: e.cgroups, log: cfg.Logger}
	}
	host.Set(cg)
	if cfg.Pool.Size > 0 {
		if e.pool, err = newPool(e, cfg.Pool); err != nil {
			return nil, err
		}
	}
	if cfg.Pool.Live > 0 {
		if e.live, err = newLivePool(e, cfg.Pool); err != nil {
			if e.pool != nil {
				e.pool.close()
			}
			return nil, err
		}
	}
	return e, nil
}

// Host returns what this Executor can enforce on this host, as policy.Check
// judges it: the host probe, with the cgroup check saying whether New could
// set up its cgroup parent. The caller may change its copy.
func (e *Executor) Host() *policy.Host { return e.host.Clone() }

// FilterCached reports whether the seccomp filter of p is at hand without
// compiling it: profile "none", the default profile's compiled ahead
// (seccomp.Precompiled), compiled before by this Executor, or in its disk
// cache (Config.SeccompCacheDir; it is then loaded for the run).
// A binary without libseccomp (seccomp.CanCompile false) can run only
// such policies; the CLI that scripts/build makes hands the others to
// airlock-daemon. A policy that does not validate reports true: its run
// refuses it, naming why.
func (e *Executor) FilterCached(p policy.Policy) bool {
	// The filter depends on the backend and network Check decides (the
	// process backend's socket gate): a policy it refuses needs none.
	enf, err := e.check(&p)
	if err != nil || !enf.Seccomp {
		return true
	}
	f, _, _, err := e.cachedFilter(p.Seccomp, filterFor(p, enf))
	return err != nil || f != nil
}

// filter returns the compiled filter of a policy's seccomp part (nil for
// profile "none"), compiling each distinct one once: cached in memory and,
// if configured, on disk. opts are what the filter depends on beyond s
// (filterFor): the jail's inside ids, the process backend's socket gate.
func (e *Executor) filter(s policy.Seccomp, opts seccomp.Options) (*seccomp.Filter, error) {
	if s.Profile == "none" {
		return nil, nil
	}
	f, key, body, err := e.cachedFilter(s, opts)
	if err != nil || f != nil {
		return f, err
	}
	prof, err := seccomp.ResolveData(s, body)
	if err != nil {
		return nil, err
	}
	opts.Notify = e.notify
	e.compiles.Add(1)
	prog, err := seccomp.Compile(prof, opts)
	if err != nil {
		return nil, err
	}
	f = &seccomp.Filter{Profile: prof.Name, Rules: prof.RuleCount(), Program: prog, Notify: e.notify}
	e.storeCached(key, f)
	e.mu.Lock()
	e.filters[key] = f
	e.mu.Unlock()
	return f, nil
}

// filterFor is what p's filter depends on beyond its seccomp part, as
// Check decided its run: the jail's inside ids, the only ones its user
// namespace maps, to which id changes are confined (seccomp.IDs); the
// process backend's socket gate (Enforcement.Sockets), which has no user
// namespace and so no ids.
func filterFor(p policy.Policy, enf policy.Enforcement) seccomp.Options {
	o := seccomp.Options{SocketGate: enf.Sockets}
	if !enf.Process() {
		uid, gid := p.InsideIDs()
		o.IDs = &seccomp.IDs{UID: uint32(uid), GID: uint32(gid)}
	}
	return o
}

// cachedFilter returns s's compiled filter compiled ahead
// (seccomp.Precompiled), from memory or, loading it into memory, from the
// disk cache; nil when neither has it, with its cache key
// and the imported profile's content (seccomp.ReadProfile) to compile it.
func (e *Executor) cachedFilter(s policy.Seccomp, opts seccomp.Options) (f *seccomp.Filter, key string, body []byte, err error) {
	if body, err = seccomp.ReadProfile(s); err != nil {
		return nil, "", nil, err
	}
	// The default profile's program, compiled ahead for this build's
	// architecture: no cache needed (a user without a home has none),
	// nothing to hash.
	pre := opts
	pre.Notify = e.notify
	if f, ok := seccomp.Precompiled(s, pre); ok {
		return f, "", nil, nil
	}
	if key, err = e.filterKey(s, body, opts); err != nil {
		return nil, "", nil, err
	}
	e.mu.Lock()
	f, ok := e.filters[key]
	e.mu.Unlock()
	if ok {
		return f, key, body, nil
	}
	if f, ok = e.loadCached(key); ok {
		e.mu.Lock()
		e.filters[key] = f
		e.mu.Unlock()
		return f, key, body, nil
	}
	return nil, key, body, nil
}

// Request is one program to run under a policy: either Args, or a
// Language with its Code.
type Request struct {
	// Args is the program and its arguments, looked up in the sandbox's PATH.
	Args []string
	// Language names an installed language (see SupportsLanguage); Code is
	// then its source, written to /workspace as a file (no argv length
	// limit), and Argv its arguments.
	Language string
	Code     string
	Argv     []string
	// Input, if set, is a JSON document given to the program as the file
	// /workspace/input.json, whose path is in $AIRLOCK_INPUT.
	Input json.RawMessage
	// Files are written into /workspace before the run, by relative path.
	Files map[string][]byte
	// CollectFiles returns the files the program leaves in /workspace
	// (not the code, input or request files), within FileLimits: links,
	// FIFOs and devices are reported, never followed or opened.
	CollectFiles bool
	FileLimits   FileLimits
	// Policy governs the run. Its zero value is the default policy.
	Policy policy.Policy
	// Stdin is the program's input. nil = empty.
	Stdin io.Reader
	// Stdout and Stderr, when set, receive the program's output as it is
	// written; when nil the stream is captured into the Result, capped at
	// the policy's MaxOutput.
	Stdout, Stderr io.Writer
	// LimitStreams caps Stdout and Stderr (when set) at the policy's
	// MaxOutput too, as captured streams are: past it the rest is
	// dropped, the sandbox is killed and the status is output_limit.
	// false = passed through whole.
	LimitStreams bool
	// Signals, if set, are delivered to the running program as they
	// arrive (to the sandbox's pid 1: see nsjail.Sandbox.Signal), from
	// its exec to its end: how the CLI passes on the SIGINT, SIGTERM,
	// SIGHUP, ... it receives. Ending the run is the context's job.
	Signals <-chan os.Signal
	// ProgramGate, if set, holds the program back until it is closed
	// (nsjail.Spec.ProgramGate): the sandbox is built meanwhile. A cold
	// start (no Launched, or one that does not fit) starts its init only
	// then. The CLI holds its program until its signal forwarding is in
	// place.
	ProgramGate <-chan struct{}
	// TTY, when set, is the program's stdin, stdout and stderr instead:
	// the slave of a pty the caller relays (never the caller's own
	// terminal), the program's controlling terminal where the sandbox has
	// a reaper (Config.SpawnPath). Nothing is captured; no warm sandbox.
	TTY *os.File
	// Launched, if set, is this request's init started ahead (Launch,
	// while the caller was still making its Executor): Execute runs the
	// request in it when it fits the resolved sandbox, and otherwise
	// starts cold. Execute (an Executor's or a Session's) closes it on
	// every path.
	Launched *nsjail.Launched
}

// ErrorResult is the Result of a request Execute refused or could not
// run (err non-nil and no Result): status "error", err classified in
// Error (class, retryable, stage, field, message, fix), and the exit code
// its class gives (125, or 75 when a retry can help). nil for a nil err.
// A caller that reports every outcome as a Result (the CLI's --json, a
// server) uses it for the failures Execute returns without one.
func ErrorResult(err error) *Result {
	r := nsjail.ErrorResult(err)
	if r == nil {
		return nil
	}
	return &Result{Result: *r}
}

// Execute runs req and returns its Result. Program outcomes (non-zero
// exit, signal, timeout, output overflow) are Results with a nil error; an
// error means there is no trusted outcome and its class (ErrInvalid,
// ErrUnsupported, ErrUnavailable) says whether to fix, give up or retry.
// A setup failure returns a setup_error Result together with the error.
func (e *Executor) Execute(ctx context.Context, req Request) (*Result, error) {
	if req.Launched != nil {
		defer req.Launched.Close() // after a Start, a no-op
	}
	if e.isClosed() {
		return nil, errClosed
	}
	return e.execute(ctx, req, nil)
}

var errClosed = policy.Invalid("executor", "closed")

func (e *Executor) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// execute runs req; ws is a session's workspace, or nil. The policy is
// checked against the host once (check), and that one decision picks the
// backend, the pool, the workspace and the spec.
func (e *Executor) execute(ctx context.Context, req Request, ws *workspace) (*Result, error) {
	start := time.Now()
	enf, err := e.check(&req.Policy)
	if err != nil {
		return nil, err
	}
	e.phase(start, "checked")
	if e.pool != nil && ws == nil && !enf.Process() {
		if res, ok, err := e.pool.execute(ctx, req, enf); ok {
			return res, err
		}
	}
	req, lang, skip, ws, temp, err := e.prepare(req, ws, enf.Process())
	if err != nil {
		return nil, err
	}
	if temp {
		defer ws.remove()
	}
	e.phase(start, "workspace")
	jres, err := e.run(ctx, req, enf, start)
	return outcome(jres, err, lang, req, ws, skip)
}

// phase logs, at debug level, that a step of an Execute is done and how
// long after Execute began (as nsjail logs the jail's steps, since its
// start): where a cold run's milliseconds go. Never payload.
func (e *Executor) phase(start time.Time, name string) {
	e.cfg.Logger.Debug("phase", slog.String("phase", name), slog.Duration("since_execute", time.Since(start)))
}

// check validates p (filling in its defaults) and decides how it runs
// on this host: policy.Check against the Executor's host.
func (e *Executor) check(p *policy.Policy) (policy.Enforcement, error) {
	if err := p.Validate(); err != nil {
		return policy.Enforcement{}, err
	}
	enf, err := policy.Check(*p, e.host)
	if err != nil {
		return enf, err
	}
	enf.Weakened, err = seccomp.Weakenings(*p)
	return enf, err
}

// record writes what Check decided into a run's result.
func record(res *nsjail.Result, enf policy.Enforcement) {
	res.Enforced.NotEnforced, res.Enforced.Weakened = enf.NotEnforced(), enf.Weakened
}

// outcome is an execution's Result: the jail's, the language and, when
// asked for, the files the program left in the workspace (but skip).
func outcome(jres *nsjail.Result, err error, lang string, req Request, ws *workspace, skip map[string]bool) (*Result, error) {
	if jres == nil {
		return nil, err
	}
	res := &Result{Result: *jres, Language: lang}
	if err == nil && req.CollectFiles {
		if res.Files, err = ws.collect(req.FileLimits, skip); err != nil {
			err = &policy.SetupError{Stage: "files out", Err: err}
		}
	}
	return res, err
}

// prepare writes a request's code, input and files into a workspace (the
// session's, or a new temporary one) and turns a language request into
// Args. Requests that need none of it pass through.
// The process backend always runs in a workspace: it is its working
// directory on the host.
func (e *Executor) prepare(req Request, ws *workspace, process bool) (Request, string, map[string]bool, *workspace, bool, error) {
	skip := map[string]bool{}
	if ws == nil && !process && req.Language == "" && len(req.Files) == 0 && len(req.Input) == 0 && !req.CollectFiles {
		return req, "", skip, nil, false, nil
	}
	var lang Language
	switch {
	case req.Language != "" && len(req.Args) > 0:
		return req, "", nil, nil, false, policy.Invalid("request", "give Args, or Language and Code, not both")
	case req.Language == "" && len(req.Argv) > 0:
		return req, "", nil, nil, false, policy.Invalid("argv", "Argv goes with Language; put arguments in Args")
	case req.Language != "":
		var err error
		if lang, err = e.language(req.Language); err != nil {
			return req, "", nil, nil, false, err
		}
	}
	if req.Policy.Workspace != "" {
		return req, "", nil, nil, false, policy.Invalid("workspace", "airlock makes the workspace for code, files and sessions; leave policy.workspace empty")
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return req, "", nil, nil, false, policy.Invalid("input", "not valid JSON")
	}
	temp := ws == nil
	if temp {
		var err error
		if ws, err = newWorkspace(e.cfg.WorkDir); err != nil {
			return req, "", nil, nil, false, err
		}
	}
	fail := func(err error) (Request, string, map[string]bool, *workspace, bool, error) {
		if temp {
			ws.remove()
		}
		return req, "", nil, nil, false, err
	}
	env := map[string]string{}
	for k, v := range req.Policy.Setenv {
		env[k] = v
	}
	// Where the program sees the workspace.
	root := "/workspace"
	if process {
		root = ws.dir
	}
	write := func(name string, data []byte) error { skip[name] = true; return ws.write(name, data) }
	if lang.Name != "" {
		if err := write(lang.File, []byte(req.Code)); err != nil {
			return fail(err)
		}
		req.Args = lang.command(root, req.Argv)
	}
	if len(req.Input) > 0 {
		if err := write("input.json", req.Input); err != nil {
			return fail(err)
		}
		env["AIRLOCK_INPUT"] = root + "/input.json"
	}
	for name, data := range req.Files {
		if err := write(name, data); err != nil {
			return fail(err)
		}
	}
	req.Policy.Workspace, req.Policy.Setenv = ws.dir, env
	return req, lang.Name, skip, ws, temp, nil
}

// language returns an installed language: ErrUnsupported when the table
// knows it but this host lacks its interpreter, ErrInvalid when unknown.
func (e *Executor) language(name string) (Language, error) {
	if l, ok := e.langs()[name]; ok {
		return l, nil
	}
	for _, l := range languages {
		if l.Name == name || slices.Contains(l.Aliases, name) {
			return Language{}, &policy.UnsupportedError{Control: "language " + name, Reason: l.Interpreter + " is not installed in /usr/local/bin, /usr/bin or /bin", Fix: "install " + l.Interpreter}
		}
	}
	return Language{}, policy.Invalid("language", "%q is not one of %v", name, names(e.langs()))
}

// run resolves req and runs it in the jail, in its own cgroup.
func (e *Executor) run(ctx context.Context, req Request, enf policy.Enforcement, start time.Time) (*nsjail.Result, error) {
	spec, err := e.resolve(req, enf)
	if err != nil {
		return nil, err
	}
	e.phase(start, "resolved")
	if spec.CgroupLimits != nil {
		g, err := e.groups.take(*spec.CgroupLimits)
		if err != nil {
			return nil, &policy.SetupError{Stage: "cgroup", Err: err}
		}
		e.phase(start, "cgroup")
		// Removed after every run, killed or not (in the background: Run
		// has read its stats, and its tasks are gone); a supervisor killed
		// before this runs leaves it to the next one's ReapStale.
		defer e.groups.release(g)
		spec.Cgroup = g
	}
	var res *nsjail.Result
	if l := req.Launched; l != nil && l.Usable(&spec) {
		res, err = l.Run(ctx, spec)
	} else {
		if l != nil {
			l.Close() // before a second init is started
		}
		// Without SetSignals a cold init starts once the caller's gate is
		// open: it inherits the caller's signal dispositions as they are
		// then (the CLI has its handlers in place, which the child resets
		// to the default), not in the middle of their registration. (An
		// init launched ahead inherits them as they were at its launch.)
		// With SetSignals the init sets them itself, and starts at once:
		// the gate holds only the program.
		if !e.cfg.SetSignals {
			waitGate(ctx, req.ProgramGate, time.Duration(req.Policy.Timeout))
		}
		res, err = nsjail.Run(ctx, spec)
	}
	if res != nil {
		record(res, enf)
	}
	return res, err
}

// waitGate waits for gate (if any) to open, for ctx's end, or for the
// run's timeout: a gate that never opens is then the sandbox's to end
// (nsjail.Spec.ProgramGate).
func waitGate(ctx context.Context, gate <-chan struct{}, timeout time.Duration) {
	if gate == nil {
		return
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-gate:
	case <-ctx.Done():
	case <-expired:
	}
}

// Launch starts, ahead of New, the init of the sandbox an Executor made
// with cfg would start cold for req, for req.Launched: a one-shot caller
// (the CLI) overlaps the init's start (the spawn helper, the namespaces'
// clone, the init's exec and runtime start: 2 ms here) with its own
// setup (New, the policy check, the filter, the cgroup). It returns nil
// where that does not pay or cannot be: a warm pool, no spawn helper or
// init binary, a terminal, streams that are no files, net allow, the
// process backend asked for, or a cgroup v2 host (a cold init is born
// in its cgroup there; a launched one would be moved in by pid, which
// waits for an RCU grace period). An init whose start fails, or that
// the resolved sandbox does not fit (another backend or ids), is closed
// by Execute, which then starts cold: the outcome is the same as
// without it.
func Launch(cfg Config, req Request) *nsjail.Launched {
	spec, ok := launchSpec(cfg, req)
	if !ok {
		return nil
	}
	l, err := nsjail.Launch(spec)
	if err != nil {
		return nil
	}
	return l
}

// Adopt is Launch with a spawn helper the caller started itself, before
// it could make its Config and Request (st; the CLI starts one as its
// process starts: nsjail.Started says how): it returns st as req's
// launched init when st fits what Launch would start for req. Otherwise
// it kills st (the helper and its init) and returns what Launch returns
// for req.
func Adopt(cfg Config, req Request, st nsjail.Started) *nsjail.Launched {
	spec, ok := launchSpec(cfg, req)
	if !ok {
		nsjail.Abandon(st)
		return nil
	}
	if l, err := nsjail.Adopt(spec, st); err == nil {
		return l
	}
	l, err := nsjail.Launch(spec)
	if err != nil {
		return nil
	}
	return l
}

// launchSpec is the launch part of the spec that an Executor made with
// cfg would start cold for req (resolve's ids, network and output cap),
// and whether launching it ahead pays and can be done (Launch).
func launchSpec(cfg Config, req Request) (nsjail.Spec, bool) {
	p := req.Policy
	if cfg.Pool.Size > 0 || cfg.SpawnPath == "" || cfg.InitPath == "" || req.TTY != nil || p.Validate() != nil ||
		p.Network() == policy.NetAllow || p.Backend == "process" || cgroups.HostMode() == cgroups.Unified {
		return nsjail.Spec{}, false
	}
	uid, gid := p.InsideIDs()
	return nsjail.Spec{InitPath: cfg.InitPath, SpawnPath: cfg.SpawnPath, HostNetwork: p.Network() == policy.NetHost, UID: uid, GID: gid,
		Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, LimitStreams: req.LimitStreams, OutputLimit: int64(p.MaxOutput), TimerSlack: cfg.TimerSlack,
		SetSignals: cfg.SetSignals, SignalsIgnored: cfg.SignalsIgnored, SignalsBlocked: cfg.SignalsBlocked, Logger: cfg.Logger}, true
}

// Resolve turns a request into the fully resolved jail spec, refusing
// (ErrUnsupported) what this host cannot enforce unless the policy is
// best_effort; the second value lists what is not enforced (see
// policy.Check: what best_effort waived, and the defaults the chosen
// backend cannot apply).
//
// Resolve starts nothing and changes nothing on the host: no process,
// cgroup, mount or workspace is made (when spec.CgroupLimits is set, the
// caller makes the cgroup, as Execute does, or runs without one). It does
// two things beyond computing: it reads the files the policy names (an
// imported seccomp profile, mount sources and the workspace, to check
// them), and it compiles the policy's seccomp filter once per distinct
// filter (the default profile's is compiled ahead, built in:
// seccomp.Precompiled), caching it in this Executor's memory and, with
// Config.SeccompCacheDir, on disk (that directory is made if missing, mode
// 0700; one file per filter, written to a temporary name and renamed; a
// filter found there is read instead of compiled).
func (e *Executor) Resolve(req Request) (nsjail.Spec, []string, error) {
	enf, err := e.check(&req.Policy)
	if err != nil {
		return nsjail.Spec{}, nil, err
	}
	spec, err := e.resolve(req, enf)
	if err != nil {
		return nsjail.Spec{}, nil, err
	}
	return spec, enf.NotEnforced(), nil
}

// resolve is Resolve for a policy already validated and checked.
func (e *Executor) resolve(req Request, enf policy.Enforcement) (nsjail.Spec, error) {
	p := req.Policy
	if len(req.Args) == 0 || req.Args[0] == "" {
		return nsjail.Spec{}, policy.Invalid("args", "no program given")
	}
	limits, rl := e.limits(p, enf)
	var filter *seccomp.Filter
	if enf.Seccomp {
		var err error
		if filter, err = e.filter(p.Seccomp, filterFor(p, enf)); err != nil {
			return nsjail.Spec{}, err
		}
	}
	if enf.Process() {
		if p.UID != nil || p.GID != nil || req.TTY != nil {
			// No user namespace to map them in, no reaper to hand a
			// terminal to: refused, not ignored, best_effort or not (a
			// result has no field that would say they were dropped).
			return nsjail.Spec{}, policy.Invalid("uid", "inside ids (uid, gid) and --tty need the namespaces backend; the process backend runs as a host uid")
		}
		return e.processSpec(req, p, enf, rl, limits, filter)
	}
	extra, err := userMounts(p)
	if err != nil {
		return nsjail.Spec{}, err
	}
	if p.Workspace != "" {
		if err := requireDir("workspace", p.Workspace); err != nil {
			return nsjail.Spec{}, err
		}
	}
	hostNet := p.Network() == policy.NetHost
	uid, gid := p.InsideIDs()
	var console string
	if req.TTY != nil {
		// Its path in the host's devpts, bound at /dev/console.
		if console, err = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(req.TTY.Fd()))); err != nil || !strings.HasPrefix(console, "/dev/pts/") {
			return nsjail.Spec{}, policy.Invalid("tty", "not a pty's slave (%q, %v)", console, err)
		}
	}
	plan, err := rootfs.Default(rootfs.Options{Workspace: p.Workspace, TmpfsSize: p.MemoryLimit(), WorkspaceSize: int64(p.WorkspaceSize), HostNetwork: hostNet, UID: uid, GID: gid, Console: console, Extra: extra})
	if err != nil {
		return nsjail.Spec{}, policy.Invalid("mounts", "%v", err)
	}
	spec := e.baseSpec(req, p, rl, limits, filter)
	spec.Env, spec.Dir, spec.HostNetwork, spec.Plan = environment(p), p.Chdir, hostNet, plan
	spec.Landlock = landlock(enf, plan, false)
	if p.Network() == policy.NetAllow {
		// The request's own rules: a pooled sandbox has the listener
		// (its jail), the proxy comes with each request.
		if spec.Egress, err = egress.New(egress.Config{Egress: p.Egress}); err != nil {
			return nsjail.Spec{}, err
		}
		spec.EgressPort = egress.Port
	}
	spec.UID, spec.GID = uid, gid
	return spec, nil
}

// landlock is a run's Landlock ruleset, as policy.Check decided: the
// paths of plan (the process backend's on the host: onHost), and its
// TCP denial and scopes.
func landlock(enf policy.Enforcement, plan rootfs.Plan, onHost bool) nsjail.Landlock {
	if enf.Landlock == 0 {
		return nsjail.Landlock{}
	}
	return nsjail.Landlock{ABI: enf.Landlock, Paths: nsjail.LandlockPaths(plan, onHost), Net: enf.LandlockNet, Scope: enf.LandlockScope}
}

// processSpec is the process backend's spec: the program runs in the
// workspace directory on the host, with the policy's environment only.
// What it cannot do (mounts, another working directory, the network) was
// refused or listed by policy.Check.
func (e *Executor) processSpec(req Request, p policy.Policy, enf policy.Enforcement, rl []nsjail.Rlimit, limits *cgroups.Limits, filter *seccomp.Filter) (nsjail.Spec, error) {
	if p.Workspace == "" {
		return nsjail.Spec{}, policy.Invalid("workspace", "the process backend runs in a host workspace directory (Execute makes one)")
	}
	env := environment(p)
	for i, kv := range env {
		if strings.HasPrefix(kv, "HOME=") {
			env[i] = "HOME=" + p.Workspace
		}
	}
	spec := e.baseSpec(req, p, rl, limits, filter)
	spec.Env, spec.Dir, spec.Process = env, p.Workspace, true
	if enf.Landlock > 0 {
		// What the jail's plan would bind, on the host: the system
		// directories read and execute, the workspace read and write;
		// temporary files go to the workspace, the one writable place.
		// The policy's binds (each a host path at its own path: Check
		// refused the rest) are rules too.
		extra, err := userMounts(p)
		if err != nil {
			return nsjail.Spec{}, err
		}
		plan, err := rootfs.Default(rootfs.Options{Workspace: p.Workspace, HostNetwork: p.Network() == policy.NetHost, Extra: extra})
		if err != nil {
			return nsjail.Spec{}, &policy.SetupError{Stage: "landlock", Err: err}
		}
		spec.Landlock = landlock(enf, plan, true)
		spec.Env = setEnv(spec.Env, "TMPDIR", p.Workspace)
	}
	return spec, nil
}

// setEnv sets k=v in env unless env sets k already (a policy's Setenv
// wins), keeping it sorted.
func setEnv(env []string, k, v string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return env
		}
	}
	env = append(env, k+"="+v)
	slices.Sort(env)
	return env
}

// baseSpec holds what both backends' specs share.
func (e *Executor) baseSpec(req Request, p policy.Policy, rl []nsjail.Rlimit, limits *cgroups.Limits, filter *seccomp.Filter) nsjail.Spec {
	return nsjail.Spec{
		Args:           req.Args,
		Rlimits:        rl,
		CgroupLimits:   limits,
		Seccomp:        filter,
		Timeout:        time.Duration(p.Timeout),
		CPUTime:        time.Duration(p.CPUTime),
		TTY:            req.TTY,
		Stdin:          req.Stdin,
		Stdout:         req.Stdout,
		Stderr:         req.Stderr,
		Signals:        req.Signals,
		ProgramGate:    req.ProgramGate,
		LimitStreams:   req.LimitStreams,
		OutputLimit:    int64(p.MaxOutput),
		InitPath:       e.cfg.InitPath,
		SpawnPath:      e.cfg.SpawnPath,
		NoReaper:       e.noReaper,
		TimerSlack:     e.cfg.TimerSlack,
		SetSignals:     e.cfg.SetSignals,
		SignalsIgnored: e.cfg.SignalsIgnored,
		SignalsBlocked: e.cfg.SignalsBlocked,
		Logger:         e.cfg.Logger,
	}
}

// limits are the cgroup limits and the rlimits of a run, as policy.Check
// decided: with a cgroup, the cgroup bounds memory, tasks and CPU;
// without one (explicit limits were refused, or waived by best_effort),
// rlimits bound memory per process (RLIMIT_DATA: RLIMIT_AS would break
// runtimes that reserve large address ranges, like V8) and tasks
// (RLIMIT_NPROC, which the kernel counts per uid in the sandbox's own
// user namespace), and nothing rates the CPU.
func (e *Executor) limits(p policy.Policy, enf policy.Enforcement) (*cgroups.Limits, []nsjail.Rlimit) {
	rl := rlimits(p)
	if enf.Limits != "rlimit" && e.cgroups != nil {
		return &cgroups.Limits{Memory: p.MemoryLimit(), Pids: p.PidsLimit(), CPUs: p.CPUs}, rl
	}
	return nil, append(rl,
		nsjail.Rlimit{Resource: unix.RLIMIT_NPROC, Cur: uint64(p.PidsLimit()), Max: uint64(p.PidsLimit())},
		nsjail.Rlimit{Resource: unix.RLIMIT_DATA, Cur: uint64(p.MemoryLimit()), Max: uint64(p.MemoryLimit())})
}

// rlimits are the limits every program runs under, cgroup or not.
func rlimits(p policy.Policy) []nsjail.Rlimit {
	same := func(res int, v uint64) nsjail.Rlimit { return nsjail.Rlimit{Resource: res, Cur: v, Max: v} }
	rl := []nsjail.Rlimit{
		same(unix.RLIMIT_NOFILE, uint64(p.OpenFiles)),
		same(unix.RLIMIT_CORE, 0),
		same(unix.RLIMIT_FSIZE, uint64(p.FileSize)),
	}
	if p.CPUTime > 0 {
		// Whole seconds, rounded up. Soft = hard: the kernel's SIGXCPU at
		// a soft limit is ignored by a pid-namespace init (the program),
		// while the hard limit's SIGKILL is not; equal limits kill every
		// process at its budget.
		secs := uint64(math.Ceil(time.Duration(p.CPUTime).Seconds()))
		rl = append(rl, same(unix.RLIMIT_CPU, secs))
	}
	return rl
}

// environment is the program's whole environment: a fixed base, the
// variables the policy passes through from the caller, then its Setenv.
func environment(p policy.Policy) []string {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/workspace", "LANG": "C.UTF-8"}
	if p.Network() == policy.NetAllow {
		// The proxy's address for every client that reads the usual
		// variables; the policy may still override them.
		maps.Copy(env, egress.Env())
	}
	for _, k := range p.EnvPass {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range p.Setenv {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func userMounts(p policy.Policy) ([]rootfs.Op, error) {
	var ops []rootfs.Op
	for _, m := range p.Mounts {
		switch m.Type {
		case policy.MountROBind, policy.MountBind:
			if _, err := os.Stat(m.Source); err != nil {
				return nil, policy.Invalid("mount source", "%v", err)
			}
			ops = append(ops, rootfs.Op{Kind: rootfs.KindBind, Source: m.Source, Target: m.Target, ReadOnly: m.Type == policy.MountROBind})
		case policy.MountTmpfs:
			size := int64(m.Size)
			if size == 0 {
				size = p.MemoryLimit()
			}
			ops = append(ops, rootfs.Op{Kind: rootfs.KindTmpfs, Target: m.Target, Options: rootfs.TmpfsOptions(size)})
		}
	}
	return ops, nil
}

func requireDir(field, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return policy.Invalid(field, "%v", err)
	}
	if !fi.IsDir() {
		return policy.Invalid(field, "%s is not a directory", path)
	}
	return nil
}
