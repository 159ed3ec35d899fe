package executor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/internal/probe"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
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
	// "" = this process forks the init itself.
	SpawnPath string
	// CgroupParent is the cgroup (a path as in /proc/self/cgroup) under
	// which per-run cgroups are made. "" = discovered: this process's own
	// cgroup, delegated on v2 (the process may move itself into a leaf,
	// <own>/airlock-supervisor), or its own v1 cgroups as root.
	CgroupParent string
	// SeccompCacheDir, if set, keeps compiled seccomp filters on disk
	// between processes (a CLI compiles its filter once, not per run). It
	// is used only while it and its files belong to this user and are not
	// writable by others. "" = in-memory caching only.
	SeccompCacheDir string
	// Pool keeps sandboxes prepared ahead of requests (see PoolConfig).
	// The zero value has no pool.
	Pool PoolConfig
	// WorkDir is where workspaces for code, files and sessions are made.
	// "" = the system temp directory. Put it on a size-limited filesystem
	// to bound what a program can write there.
	WorkDir string
}

// Executor runs requests in sandboxes. It holds no per-run state (only a
// cache of compiled seccomp filters) and is safe for concurrent use by
// many goroutines.
type Executor struct {
	cfg    Config
	notify bool   // kill rules name their syscall (user notification)
	self   string // identity of this binary, for the on-disk cache

	host    *probe.Report   // what this host can enforce
	nsErr   error           // why the namespace jail cannot run here, if it cannot
	cgroups *cgroups.Parent // where per-run cgroups go; nil = none usable
	cgErr   error           // why not, when cgroups is nil
	groups  *groups         // cold runs' groups: a spare made ahead, removals in the background

	langs map[string]Language // installed languages, by name and alias
	pool  *pool               // prepared sandboxes; nil = none

	mu       sync.Mutex
	filters  map[string]*seccomp.Filter // compiled, by profile hash
	sessions map[*Session]bool
	closed   bool
}

// New returns an Executor.
func New(cfg Config) (*Executor, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Kill-by-notify needs SECCOMP_RET_USER_NOTIF in the kernel and
	// libseccomp API 6; without it kills are KILL_PROCESS, unnamed.
	notify := seccomp.NotifySupported() && seccomp.ActionAvailable(seccomp.RetUserNotif)
	// Fail closed on what no policy can do without: the new mount API and
	// user namespaces.
	// The jail needs user namespaces and the new mount API; without them
	// only the process backend can run, by explicit choice or best_effort.
	host := probe.Run()
	var nsErr error
	for _, name := range []string{"kernel", "user namespaces"} {
		if c := host.Get(name); !c.OK && nsErr == nil {
			nsErr = &policy.UnsupportedError{Control: name, Reason: c.Detail, Fix: c.Fix + "; or choose the process backend (no isolation)"}
		}
	}
	e := &Executor{cfg: cfg, notify: notify, host: host, nsErr: nsErr, langs: detectLanguages(),
		filters: map[string]*seccomp.Filter{}, sessions: map[*Session]bool{}}
	if cfg.SeccompCacheDir != "" {
		e.self = selfID()
	}
	e.cgroups, e.cgErr = cgroups.Find(cfg.CgroupParent)
	if e.cgroups != nil {
		// Groups left by a supervisor that died mid-run (SIGKILL) go now.
		if n, err := e.cgroups.ReapStale(); n > 0 || err != nil {
			cfg.Logger.Info("reaped stale cgroups", slog.Int("count", n), slog.Any("error", err))
		}
		e.groups = &groups{parent: e.cgroups, log: cfg.Logger}
	}
	if cfg.Pool.Size > 0 {
		var err error
		if e.pool, err = newPool(e, cfg.Pool); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// filter returns the compiled filter of a policy's seccomp part (nil for
// profile "none"), compiling each distinct one once: cached in memory and,
// if configured, on disk.
func (e *Executor) filter(s policy.Seccomp) (*seccomp.Filter, error) {
	if s.Profile == "none" {
		return nil, nil
	}
	body, err := seccomp.ReadProfile(s)
	if err != nil {
		return nil, err
	}
	key, err := e.filterKey(s, body)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	f, ok := e.filters[key]
	e.mu.Unlock()
	if ok {
		return f, nil
	}
	if f, ok = e.loadCached(key); !ok {
		prof, err := seccomp.ResolveData(s, body)
		if err != nil {
			return nil, err
		}
		prog, err := seccomp.Compile(prof, seccomp.Options{Notify: e.notify})
		if err != nil {
			return nil, err
		}
		f = &seccomp.Filter{Profile: prof.Name, Rules: prof.RuleCount(), Program: prog, Notify: e.notify}
		e.storeCached(key, f)
	}
	e.mu.Lock()
	e.filters[key] = f
	e.mu.Unlock()
	return f, nil
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
}

// Execute runs req and returns its Result. Program outcomes (non-zero
// exit, signal, timeout, output overflow) are Results with a nil error; an
// error means there is no trusted outcome and its class (ErrInvalid,
// ErrUnsupported, ErrUnavailable) says whether to fix, give up or retry.
// A setup failure returns a setup_error Result together with the error.
func (e *Executor) Execute(ctx context.Context, req Request) (*Result, error) {
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

// execute runs req; ws is a session's workspace, or nil.
func (e *Executor) execute(ctx context.Context, req Request, ws *workspace) (*Result, error) {
	process, _, err := e.backend(req.Policy)
	if err != nil {
		return nil, err
	}
	if e.pool != nil && ws == nil && !process {
		if res, ok, err := e.pool.execute(ctx, req); ok {
			return res, err
		}
	}
	req, lang, skip, ws, temp, err := e.prepare(req, ws, process)
	if err != nil {
		return nil, err
	}
	if temp {
		defer ws.remove()
	}
	jres, err := e.run(ctx, req)
	return outcome(jres, err, lang, req, ws, skip)
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

// backend says whether a policy runs on the process backend: when it
// chose it, or, as a best_effort fallback, when the jail cannot run here
// (then the isolation it lacks is listed as not enforced). Otherwise a
// host without the jail's requirements refuses.
func (e *Executor) backend(p policy.Policy) (bool, []string, error) {
	switch {
	case p.Backend == "process":
		return true, nil, nil
	case e.nsErr == nil:
		return false, nil, nil
	case p.BestEffort:
		return true, []string{"namespaces", "filesystem isolation", "network isolation"}, nil
	}
	return false, nil, e.nsErr
}

// language returns an installed language: ErrUnsupported when the table
// knows it but this host lacks its interpreter, ErrInvalid when unknown.
func (e *Executor) language(name string) (Language, error) {
	if l, ok := e.langs[name]; ok {
		return l, nil
	}
	for _, l := range languages {
		if l.Name == name || slices.Contains(l.Aliases, name) {
			return Language{}, &policy.UnsupportedError{Control: "language " + name, Reason: l.Interpreter + " is not installed in /usr/local/bin, /usr/bin or /bin", Fix: "install " + l.Interpreter}
		}
	}
	return Language{}, policy.Invalid("language", "%q is not one of %v", name, names(e.langs))
}

// run resolves req and runs it in the jail, in its own cgroup.
func (e *Executor) run(ctx context.Context, req Request) (*nsjail.Result, error) {
	spec, notEnforced, err := e.Resolve(req)
	if err != nil {
		return nil, err
	}
	if spec.CgroupLimits != nil {
		g, err := e.groups.take(*spec.CgroupLimits)
		if err != nil {
			return nil, &policy.SetupError{Stage: "cgroup", Err: err}
		}
		// Removed after every run, killed or not (in the background: Run
		// has read its stats, and its tasks are gone); a supervisor killed
		// before this runs leaves it to the next one's ReapStale.
		defer e.groups.release(g)
		spec.Cgroup = g
	}
	res, err := nsjail.Run(ctx, spec)
	if res != nil {
		res.Enforced.NotEnforced = notEnforced
	}
	return res, err
}

// Resolve turns a request into the fully resolved jail spec, refusing
// (ErrUnsupported) what this host cannot enforce unless the policy is
// best_effort; the second value lists what best_effort let go unenforced.
// Resolve has no side effects: when spec.CgroupLimits is set, the caller
// makes the cgroup (Execute does) or runs without one.
func (e *Executor) Resolve(req Request) (nsjail.Spec, []string, error) {
	p := req.Policy
	if err := p.Validate(); err != nil {
		return nsjail.Spec{}, nil, err
	}
	if len(req.Args) == 0 || req.Args[0] == "" {
		return nsjail.Spec{}, nil, policy.Invalid("args", "no program given")
	}
	process, notEnforced, err := e.backend(p)
	if err != nil {
		return nsjail.Spec{}, nil, err
	}
	limits, rl, limitsNote, err := e.limits(p)
	if err != nil {
		return nsjail.Spec{}, nil, err
	}
	notEnforced = append(notEnforced, limitsNote...)
	filter, err := e.filter(p.Seccomp)
	if c := e.host.Get("seccomp"); err == nil && filter != nil && !c.OK {
		err = &policy.UnsupportedError{Control: "seccomp", Reason: c.Detail, Fix: c.Fix}
	}
	if errors.Is(err, policy.ErrUnsupported) && p.BestEffort {
		filter, err = nil, nil
		notEnforced = append(notEnforced, "seccomp")
	}
	if err != nil {
		return nsjail.Spec{}, nil, err
	}
	if process {
		return e.processSpec(req, p, rl, limits, filter, notEnforced)
	}
	extra, err := userMounts(p)
	if err != nil {
		return nsjail.Spec{}, nil, err
	}
	if p.Workspace != "" {
		if err := requireDir("workspace", p.Workspace); err != nil {
			return nsjail.Spec{}, nil, err
		}
	}
	plan, err := rootfs.Default(rootfs.Options{Workspace: p.Workspace, TmpfsSize: p.MemoryLimit(), HostNetwork: p.Net == policy.NetHost, Extra: extra})
	if err != nil {
		return nsjail.Spec{}, nil, policy.Invalid("mounts", "%v", err)
	}
	spec := e.baseSpec(req, p, rl, limits, filter)
	spec.Env, spec.Dir, spec.HostNetwork, spec.Plan = environment(p), p.Chdir, p.Net == policy.NetHost, plan
	return spec, notEnforced, nil
}

// processSpec is the process backend's spec: the program runs in the
// workspace directory on the host, with the policy's environment only.
func (e *Executor) processSpec(req Request, p policy.Policy, rl []nsjail.Rlimit, limits *cgroups.Limits, filter *seccomp.Filter, notEnforced []string) (nsjail.Spec, []string, error) {
	switch {
	case p.Workspace == "":
		return nsjail.Spec{}, nil, policy.Invalid("workspace", "the process backend runs in a host workspace directory (Execute makes one)")
	case len(p.Mounts) > 0:
		return nsjail.Spec{}, nil, policy.Invalid("mounts", "the process backend cannot mount; use the namespaces backend")
	}
	env := environment(p)
	for i, kv := range env {
		if strings.HasPrefix(kv, "HOME=") {
			env[i] = "HOME=" + p.Workspace
		}
	}
	spec := e.baseSpec(req, p, rl, limits, filter)
	spec.Env, spec.Dir, spec.Process = env, p.Workspace, true
	return spec, notEnforced, nil
}

// baseSpec holds what both backends' specs share.
func (e *Executor) baseSpec(req Request, p policy.Policy, rl []nsjail.Rlimit, limits *cgroups.Limits, filter *seccomp.Filter) nsjail.Spec {
	return nsjail.Spec{
		Args:         req.Args,
		Rlimits:      rl,
		CgroupLimits: limits,
		Seccomp:      filter,
		Timeout:      time.Duration(p.Timeout),
		CPUTime:      time.Duration(p.CPUTime),
		Stdin:        req.Stdin,
		Stdout:       req.Stdout,
		Stderr:       req.Stderr,
		OutputLimit:  int64(p.MaxOutput),
		InitPath:     e.cfg.InitPath,
		SpawnPath:    e.cfg.SpawnPath,
		Logger:       e.cfg.Logger,
	}
}

// limits decides how memory, tasks and CPU are bounded. With a usable
// cgroup: by the cgroup. Without one, the defaults fall back to rlimits
// (reported as such), but a limit the policy asked for explicitly is
// refused, naming the fix, unless the policy is best_effort; then it too
// falls back to rlimits, and a CPU rate (which no rlimit can express) is
// listed as not enforced.
func (e *Executor) limits(p policy.Policy) (*cgroups.Limits, []nsjail.Rlimit, []string, error) {
	rl := rlimits(p)
	if e.cgroups != nil {
		return &cgroups.Limits{Memory: p.MemoryLimit(), Pids: p.PidsLimit(), CPUs: p.CPUs}, rl, nil, nil
	}
	var asked []string
	for _, c := range []struct {
		name string
		set  bool
	}{{"memory", p.Memory != 0}, {"pids", p.Pids != 0}, {"cpus", p.CPUs > 0}} {
		if c.set {
			asked = append(asked, c.name)
		}
	}
	if len(asked) > 0 && !p.BestEffort {
		u := &policy.UnsupportedError{Control: strings.Join(asked, ", ") + " limit (needs a cgroup)", Reason: e.cgErr.Error()}
		var cu *policy.UnsupportedError
		if errors.As(e.cgErr, &cu) {
			u.Reason, u.Fix = cu.Reason, cu.Fix+"; or pass --best-effort to accept per-process rlimits"
		}
		return nil, nil, nil, u
	}
	var notEnforced []string
	if p.CPUs > 0 {
		notEnforced = append(notEnforced, "cpus")
	}
	// Memory per process by RLIMIT_DATA (RLIMIT_AS would break runtimes
	// that reserve large address ranges, like V8), tasks by RLIMIT_NPROC,
	// which the kernel counts per uid in the sandbox's own user namespace.
	rl = append(rl,
		nsjail.Rlimit{Resource: unix.RLIMIT_NPROC, Cur: uint64(p.PidsLimit()), Max: uint64(p.PidsLimit())},
		nsjail.Rlimit{Resource: unix.RLIMIT_DATA, Cur: uint64(p.MemoryLimit()), Max: uint64(p.MemoryLimit())})
	return nil, rl, notEnforced, nil
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
