package executor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// PoolConfig configures an Executor's warm pool: sandboxes prepared ahead
// of requests (namespaces, root filesystem, cgroup and workspace ready,
// the init waiting for its program), so that a request pays only for the
// program's own start. A prepared sandbox serves one request and is then
// destroyed (or, with Reuse, up to Reuse requests, reset between them);
// the pool prepares a new one in the background.
type PoolConfig struct {
	// Size is how many sandboxes are kept prepared. 0 = no pool.
	Size int
	// Policy is what the pooled sandboxes are prepared for. A request
	// runs in a prepared sandbox when its policy builds the same jail
	// (filesystem, network, identity, cgroup limits) with the same
	// seccomp filter (with Config.SpawnPath and a filter that allows
	// nsjail.ReaperSyscalls, the prepared sandbox has loaded it and
	// started its reaper already: nsjail.Spec.ReaperWaits); the
	// program's part (timeout, CPU time, environment, rlimits, output
	// caps) may differ per request. Other requests, sessions and the
	// process backend run cold, as without a pool.
	Policy policy.Policy
	// Refill is how many sandboxes are prepared at once. 0 = 1.
	Refill int
	// Reuse is how many requests one prepared sandbox may serve, one
	// after another (nsjail.Spec.Recycle); 0 or 1 = one. Between two
	// requests its reaper kills every process of the last one and empties
	// /tmp, /dev/shm and /dev/mqueue, the pool empties the workspace, and
	// the cgroup's counters are reset; a request that leaves what cannot
	// be reset (SysV IPC objects, a change to pid 1's attributes, inode
	// flags or extended attributes on an emptied directory, files the
	// pool cannot remove), or that was killed (timeout, CPU, output,
	// seccomp kill rule, OOM), ends its sandbox instead. What outlives a
	// request's processes and is none of those can be seen by the next
	// (docs/serve.md lists it: /proc/1/stat's children's CPU times, id
	// counters, a TCP port in TIME_WAIT, the caches): reuse only among
	// requests that may share a sandbox. It needs a per-run cgroup whose
	// memory peak can be reset (cgroup v1, or v2 on Linux 6.12 or later),
	// the default seccomp profile with no rule for a call it denies, for
	// clone or for nsjail.RecycleSyscalls (mayRecycle), and no egress;
	// otherwise each sandbox serves one request.
	Reuse int
	// Live is how many live sandboxes (NewSandbox) are kept prepared for
	// Policy, built up to their pid 1 waiting for its first process: a
	// NewSandbox whose policy builds the same jail with the same filter
	// takes one instead of building its own. 0 = none. Independent of
	// Size (a pooled run's sandbox is never a live one).
	Live int
}

// PoolStats counts what the warm pool did.
type PoolStats struct {
	Ready    int   // prepared sandboxes waiting now
	Warm     int64 // requests served by a prepared sandbox
	Cold     int64 // requests the pool could have served but found empty
	Failures int64 // preparations that failed
	Reused   int64 // warm requests served by a sandbox that had served one before (Reuse)
}

// pool keeps up to Size prepared sandboxes. Tokens bound the number
// prepared, being prepared or in use: a refill worker takes one to
// prepare a sandbox; the token comes back when the request that used the
// sandbox has returned and the sandbox is gone.
type pool struct {
	e      *Executor
	cfg    PoolConfig
	key    nsjail.Spec // the jail pooled sandboxes have (workspace: keyDir)
	keyDir string      // an empty directory standing for a workspace in key
	ready  chan *warm
	tokens chan struct{}
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup // refill workers and cleanups of used sandboxes

	mu      sync.Mutex // orders take's wg.Add before close's wg.Wait; guards fit
	closing bool
	fit     map[string]bool // policy JSON -> fits

	warmN, coldN, failN, reusedN atomic.Int64
	// reaperWaits: the pool's filter allows what a waiting reaper does
	// under it (reaperMayWait), so its sandboxes start their reaper ahead.
	reaperWaits bool
	// recycle: Reuse > 1, and the filter allows what a recycling reaper
	// does too.
	recycle bool
}

// warm is one prepared sandbox with the workspace and cgroup it owns.
type warm struct {
	prep *nsjail.Prepared
	ws   *workspace
	cg   cgroups.Group // nil when the run has no cgroup
	// A recycled sandbox's last resolved spec and the policy (JSON) it
	// was resolved for (resolve); the preparation's to begin with.
	key  string
	spec nsjail.Spec
}

// resolve is the executor's resolve for a request in w. A recycled
// sandbox's requests mostly have one policy, which alone makes the jail,
// the filter, the limits and the environment: that part is resolved once
// for it (27 µs a request here, and its plan, shared with the
// preparation, makes Prepared.Matches' comparison a pointer's), and the
// request's own fields come from req each time.
func (w *warm) resolve(e *Executor, req Request, enf policy.Enforcement) (nsjail.Spec, error) {
	// (EnvPass reads this process's environment at each resolve.)
	if !w.prep.Recycles() || len(req.Args) == 0 || req.Args[0] == "" || req.TTY != nil || req.Policy.Network() == policy.NetAllow || len(req.Policy.EnvPass) > 0 {
		return e.resolve(req, enf)
	}
	key, err := json.Marshal(req.Policy)
	if err != nil {
		return e.resolve(req, enf)
	}
	if string(key) != w.key {
		spec, err := e.resolve(req, enf)
		if err != nil {
			return spec, err
		}
		w.key, w.spec = string(key), spec
	}
	spec := w.spec
	spec.Args, spec.TTY, spec.Stdin, spec.Stdout, spec.Stderr = req.Args, req.TTY, req.Stdin, req.Stdout, req.Stderr
	spec.Signals, spec.ProgramGate, spec.LimitStreams = req.Signals, req.ProgramGate, req.LimitStreams
	return spec, nil
}

func newPool(e *Executor, cfg PoolConfig) (*pool, error) {
	if cfg.Refill <= 0 {
		cfg.Refill = 1
	}
	cfg.Policy.Workspace = ""
	if enf, err := e.check(&cfg.Policy); err != nil {
		return nil, err
	} else if enf.Process() {
		return nil, policy.Invalid("pool", "the process backend has no jail to prepare")
	}
	keyDir, err := os.MkdirTemp(e.cfg.WorkDir, "airlock-poolkey-")
	if err != nil {
		return nil, &policy.SetupError{Stage: "pool", Err: err}
	}
	p := &pool{e: e, cfg: cfg, keyDir: keyDir, ready: make(chan *warm, cfg.Size), tokens: make(chan struct{}, cfg.Size), fit: map[string]bool{}}
	// Fail closed at New: a pool policy this host cannot enforce is an
	// error now, not a silent cold path later.
	if p.key, err = p.jail(cfg.Policy); err != nil {
		os.Remove(keyDir)
		return nil, err
	}
	p.reaperWaits = reaperMayWait(cfg.Policy.Seccomp, nsjail.ReaperSyscalls)
	p.recycle = cfg.Reuse > 1 && p.reaperWaits && mayRecycle(cfg.Policy.Seccomp)
	for range cfg.Size {
		p.tokens <- struct{}{}
	}
	p.ctx, p.stop = context.WithCancel(context.Background())
	for range cfg.Refill {
		p.wg.Add(1)
		go p.refill()
	}
	return p, nil
}

// reaperMayWait reports whether a pool's sandboxes may start their reaper
// before the request (nsjail.Spec.ReaperWaits): the reaper then makes
// nsjail.ReaperSyscalls under the pool's filter. The default profile (or
// none) allows them all; a rule naming one of them, or an imported
// profile, may not: those pools start the reaper with the request. (The
// same test with nsjail.RecycleSyscalls: whether it may recycle.)
func reaperMayWait(s policy.Seccomp, calls []string) bool {
	if seccomp.Imported(s) {
		return false
	}
	for _, r := range s.Rules {
		for _, n := range r.Names {
			if slices.Contains(calls, n) {
				return false
			}
		}
	}
	return true
}

// mayRecycle reports whether a pool's sandboxes may serve several
// requests (PoolConfig.Reuse): under the default profile only, with no
// rule naming a call the recycling reaper makes (nsjail.RecycleSyscalls)
// or one the default profile denies, and no rule for clone: what a
// reset does not undo must stay out of a program's reach (the keyrings,
// new namespaces in which it could mount, a nested cgroup, ...).
func mayRecycle(s policy.Seccomp) bool {
	if s.Profile != "" && s.Profile != "default" {
		return false
	}
	calls := append(append(seccomp.DefaultDenied(), nsjail.RecycleSyscalls...), "clone", "clone3")
	return reaperMayWait(s, calls)
}

// jail resolves a policy's jail against keyDir, for comparison.
func (p *pool) jail(pol policy.Policy) (nsjail.Spec, error) {
	pol.Workspace = p.keyDir
	spec, _, err := p.e.Resolve(Request{Args: []string{"true"}, Policy: pol})
	return spec, err
}

// fits reports whether a request's policy builds the pooled jail with
// the pooled filter. The answer for a policy is remembered (a few hundred
// at most): resolving it twice would cost a request ~0.2 ms.
func (p *pool) fits(pol policy.Policy) bool {
	if pol.Workspace != "" {
		return false
	}
	key, err := json.Marshal(pol)
	if err != nil {
		return false
	}
	p.mu.Lock()
	ok, known := p.fit[string(key)]
	p.mu.Unlock()
	if known {
		return ok
	}
	spec, err := p.jail(pol)
	ok = err == nil && nsjail.SameJail(&spec, &p.key) && nsjail.SameFilter(spec.Seccomp, p.key.Seccomp)
	p.mu.Lock()
	if len(p.fit) >= 256 {
		clear(p.fit)
	}
	p.fit[string(key)] = ok
	p.mu.Unlock()
	return ok
}

func (p *pool) refill() {
	defer p.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.tokens:
		}
		w, err := p.prepare()
		if err != nil && p.ctx.Err() != nil {
			return // closing: a preparation cut short is no failure
		}
		if err != nil {
			p.failN.Add(1)
			p.e.cfg.Logger.Warn("preparing a pooled sandbox", slog.Any("error", err))
			p.tokens <- struct{}{}
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		select {
		case p.ready <- w:
		case <-p.ctx.Done():
			p.discard(w)
			return
		}
	}
}

// prepare builds one sandbox for the pool: a workspace, a cgroup, and the
// jail with its init waiting.
func (p *pool) prepare() (*warm, error) {
	ws, err := newWorkspace(p.e.cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	pol := p.cfg.Policy
	pol.Workspace = ws.dir
	spec, _, err := p.e.Resolve(Request{Args: []string{"true"}, Policy: pol})
	if err != nil {
		ws.remove()
		return nil, err
	}
	spec.ReaperWaits, spec.Recycle = p.reaperWaits, p.recycle
	w := &warm{ws: ws, spec: spec}
	if key, err := json.Marshal(pol); err == nil {
		w.key = string(key)
	}
	if spec.CgroupLimits != nil {
		if w.cg, err = p.e.cgroups.New(*spec.CgroupLimits); err != nil {
			ws.remove()
			return nil, &policy.SetupError{Stage: "cgroup", Err: err}
		}
		spec.Cgroup = w.cg
	}
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	if w.prep, err = nsjail.Prepare(ctx, spec); err != nil {
		p.cleanup(w)
		return nil, err
	}
	return w, nil
}

// take returns a prepared sandbox, or nil when none is ready. The caller
// must end with p.wg.Done once the sandbox is cleaned up.
func (p *pool) take() *warm {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return nil
	}
	select {
	case w := <-p.ready:
		p.wg.Add(1)
		return w
	default:
		return nil
	}
}

// discard destroys a prepared sandbox that never ran anything.
func (p *pool) discard(w *warm) {
	w.prep.Close()
	p.cleanup(w)
}

func (p *pool) cleanup(w *warm) {
	if w.cg != nil {
		p.e.groups.remove(w.cg)
	}
	w.ws.remove()
}

// execute runs req, whose policy enf is, in a prepared sandbox; ok is
// false when it cannot (the request builds another jail, or none is
// ready): then nothing happened and the caller runs it cold.
// handoff is how long a used sandbox's cleanup and its replacement wait
// after the request (pool.execute).
const handoff = 2 * time.Millisecond

func (p *pool) execute(ctx context.Context, req Request, enf policy.Enforcement) (res *Result, ok bool, err error) {
	if !p.fits(req.Policy) {
		return nil, false, nil
	}
	w := p.take()
	if w == nil {
		p.coldN.Add(1)
		return nil, false, nil
	}
	p.warmN.Add(1)
	// Used or not, this sandbox is destroyed after the request, in the
	// background (the result need not wait for cgroup and directory
	// removal; Close waits for it), unless it recycles and the request
	// left it reset: then it goes back to the pool at once.
	defer func() {
		if p.putBack(w) {
			p.wg.Done()
			return
		}
		go func() {
			defer p.wg.Done()
			// The caller has its result and is delivering it (a server
			// writing its response): the cleanup and the replacement's
			// clone and Go runtime start would take the CPU that needs
			// (on 2 cores, 0.5 ms more to a served response's first
			// byte: server BenchmarkServedOverhead). They wait a moment,
			// or for Close.
			select {
			case <-time.After(handoff):
			case <-p.ctx.Done():
			}
			w.prep.Close()
			p.cleanup(w)
			// The replacement is prepared after the request, not during
			// it: on a small machine a preparation (a clone and a Go
			// runtime starting) competes with the request for the CPU.
			p.tokens <- struct{}{}
		}()
	}()
	req, lang, skip, _, _, err := p.e.prepare(req, w.ws, false)
	if err != nil {
		return nil, true, err
	}
	spec, err := w.resolve(p.e, req, enf)
	if err != nil {
		return nil, true, err
	}
	spec.Cgroup = w.cg
	if !w.prep.Matches(&spec) {
		// A program its waiting reaper cannot take (nsjail.Prepared's
		// Matches: megabytes of arguments, a NUL in one): cold, as
		// before the pool. The sandbox goes with the deferred cleanup.
		p.warmN.Add(-1)
		p.coldN.Add(1)
		return nil, false, nil
	}
	reused := w.prep.Runs() > 0
	jres, err := w.prep.Run(ctx, spec)
	if errors.Is(err, nsjail.ErrPreparedGone) {
		// A recycled sandbox that died between two requests: nothing of
		// this one ran; cold, as when the pool is empty. The sandbox
		// goes with the deferred cleanup.
		p.warmN.Add(-1)
		p.coldN.Add(1)
		return nil, false, nil
	}
	if reused {
		p.reusedN.Add(1)
	}
	if jres != nil {
		record(jres, enf)
	}
	res, err = outcome(jres, err, lang, req, w.ws, skip)
	return res, true, err
}

// putBack returns a recycling sandbox to the pool after a request, with
// its workspace emptied, when its last run left it reusable and it has
// runs left; false when it must go (the caller destroys it).
func (p *pool) putBack(w *warm) bool {
	if !w.prep.Reusable() || w.prep.Runs() >= p.cfg.Reuse || w.ws.reset() != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	select {
	case p.ready <- w: // its token is still out: there is room
		return true
	default:
		return false
	}
}

// close stops refilling and destroys every prepared sandbox; it waits for
// the cleanup of sandboxes in use, so it returns when nothing of the pool
// is left.
func (p *pool) close() error {
	p.mu.Lock()
	already := p.closing
	p.closing = true
	p.mu.Unlock()
	if already {
		return nil
	}
	p.stop()
	p.drain()
	p.wg.Wait()
	p.drain() // a worker may have put one in after the first drain
	return os.Remove(p.keyDir)
}

// drain destroys the prepared sandboxes waiting in the pool.
func (p *pool) drain() {
	for {
		select {
		case w := <-p.ready:
			p.discard(w)
		default:
			return
		}
	}
}

func (p *pool) stats() PoolStats {
	return PoolStats{Ready: len(p.ready), Warm: p.warmN.Load(), Cold: p.coldN.Load(), Failures: p.failN.Load(), Reused: p.reusedN.Load()}
}

// PoolStats reports the warm pool's counters; the zero value when the
// Executor has no pool.
func (e *Executor) PoolStats() PoolStats {
	if e.pool == nil {
		return PoolStats{}
	}
	return e.pool.stats()
}
