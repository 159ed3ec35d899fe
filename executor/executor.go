package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
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

// Result is the outcome of one execution (see nsjail.Result).
type Result = nsjail.Result

// Config configures an Executor. The zero value is usable.
type Config struct {
	// Logger receives lifecycle events, never payload data. nil = discard.
	Logger *slog.Logger
	// InitPath is the binary re-executed as the sandbox init; it must call
	// nsjail.Init first thing in main. "" = /proc/self/exe.
	InitPath string
	// SeccompCacheDir, if set, keeps compiled seccomp filters on disk
	// between processes (a CLI compiles its filter once, not per run). It
	// is used only while it and its files belong to this user and are not
	// writable by others. "" = in-memory caching only.
	SeccompCacheDir string
}

// Executor runs requests in sandboxes. It holds no per-run state (only a
// cache of compiled seccomp filters) and is safe for concurrent use by
// many goroutines.
type Executor struct {
	cfg    Config
	notify bool   // kill rules name their syscall (user notification)
	self   string // identity of this binary, for the on-disk cache

	mu      sync.Mutex
	filters map[string]*seccomp.Filter // compiled, by profile hash
}

// New returns an Executor.
func New(cfg Config) (*Executor, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Kill-by-notify needs SECCOMP_RET_USER_NOTIF in the kernel and
	// libseccomp API 6; without it kills are KILL_PROCESS, unnamed.
	notify := seccomp.NotifySupported() && seccomp.ActionAvailable(seccomp.RetUserNotif)
	e := &Executor{cfg: cfg, notify: notify, filters: map[string]*seccomp.Filter{}}
	if cfg.SeccompCacheDir != "" {
		e.self = selfID()
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
	key, err := e.filterKey(s)
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
		prof, err := seccomp.Resolve(s)
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

// Request is one program to run under a policy.
type Request struct {
	// Args is the program and its arguments, looked up in the sandbox's PATH.
	Args []string
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
	spec, notEnforced, err := e.Resolve(req)
	if err != nil {
		return nil, err
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
func (e *Executor) Resolve(req Request) (nsjail.Spec, []string, error) {
	p := req.Policy
	if err := p.Validate(); err != nil {
		return nsjail.Spec{}, nil, err
	}
	if len(req.Args) == 0 || req.Args[0] == "" {
		return nsjail.Spec{}, nil, policy.Invalid("args", "no program given")
	}
	var notEnforced []string
	if p.CPUs > 0 {
		if !p.BestEffort {
			return nsjail.Spec{}, nil, &policy.UnsupportedError{
				Control: "cpus",
				Reason:  fmt.Sprintf("a CPU rate limit needs a cgroup, and airlock does not create per-run cgroups yet (host cgroup mode: %s)", cgroups.HostMode()),
				Fix:     "drop --cpus, bound CPU time with --cpu-time, or pass --best-effort",
			}
		}
		notEnforced = append(notEnforced, "cpus")
	}
	filter, err := e.filter(p.Seccomp)
	if errors.Is(err, policy.ErrUnsupported) && p.BestEffort {
		filter, err = nil, nil
		notEnforced = append(notEnforced, "seccomp")
	}
	if err != nil {
		return nsjail.Spec{}, nil, err
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
	plan, err := rootfs.Default(rootfs.Options{Workspace: p.Workspace, TmpfsSize: int64(p.Memory), Extra: extra})
	if err != nil {
		return nsjail.Spec{}, nil, policy.Invalid("mounts", "%v", err)
	}
	spec := nsjail.Spec{
		Args:        req.Args,
		Env:         environment(p),
		Dir:         p.Chdir,
		HostNetwork: p.Net == policy.NetHost,
		Plan:        plan,
		Rlimits:     rlimits(p),
		Seccomp:     filter,
		Timeout:     time.Duration(p.Timeout),
		CPUTime:     time.Duration(p.CPUTime),
		Stdin:       req.Stdin,
		Stdout:      req.Stdout,
		Stderr:      req.Stderr,
		OutputLimit: int64(p.MaxOutput),
		InitPath:    e.cfg.InitPath,
		Logger:      e.cfg.Logger,
	}
	return spec, notEnforced, nil
}

// rlimits are the limits the program runs under. Without cgroups, memory
// is bounded per process by RLIMIT_DATA (RLIMIT_AS would break runtimes
// that reserve large address ranges, like V8) and tasks by RLIMIT_NPROC,
// which the kernel counts per uid in the sandbox's own user namespace.
func rlimits(p policy.Policy) []nsjail.Rlimit {
	same := func(res int, v uint64) nsjail.Rlimit { return nsjail.Rlimit{Resource: res, Cur: v, Max: v} }
	rl := []nsjail.Rlimit{
		same(unix.RLIMIT_NOFILE, uint64(p.OpenFiles)),
		same(unix.RLIMIT_CORE, 0),
		same(unix.RLIMIT_FSIZE, uint64(p.FileSize)),
		same(unix.RLIMIT_NPROC, uint64(p.Pids)),
		same(unix.RLIMIT_DATA, uint64(p.Memory)),
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
				size = int64(p.Memory)
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
