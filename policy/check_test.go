package policy

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// degradeEvery names every control best_effort can degrade.
const degradeEvery = DegradeLimits | DegradeSeccomp | DegradeNamespaces | DegradeLandlock | DegradeNetwork

// host builds a Host as data: every check OK, limits on cgroup2, then
// the named checks missing.
func host(missing ...CheckID) *Host {
	h := &Host{Kernel: "6.1.0", Limits: "cgroup2", Landlock: LandlockMax}
	switch {
	case slices.Contains(missing, CheckLandlock):
		h.Landlock = 0
	case slices.Contains(missing, CheckLandlockNet):
		h.Landlock = LandlockNet - 1
	case slices.Contains(missing, CheckLandlockScope):
		h.Landlock = LandlockScope - 1
	}
	for _, id := range []CheckID{CheckKernel, CheckUserNS, CheckCgroup, CheckSeccomp, CheckSeccompNotify, CheckPidfd, CheckLandlock, CheckLandlockNet, CheckLandlockScope} {
		c := Capability{ID: id, Name: string(id), OK: !slices.Contains(missing, id), Detail: "seen", Fix: "fix " + string(id)}
		h.Checks = append(h.Checks, c)
		if id == CheckCgroup && !c.OK {
			h.Limits = ""
		}
	}
	return h
}

// checkCase is one (policy, host) pair and what Check must decide.
type checkCase struct {
	name   string
	pol    func(*Policy)
	host   *Host
	err    CheckID // refused: the check the error names ("" with errControl: none)
	errCtl string  // refused: the control the error names
	want   Enforcement
	unmet  []string // NotEnforced
}

func TestCheck(t *testing.T) {
	none := func(*Policy) {}
	limits := func(p *Policy) { p.Memory, p.Pids, p.CPUs = 64<<20, 16, 0.5 }
	best := func(f func(*Policy)) func(*Policy) { return func(p *Policy) { f(p); p.BestEffort = degradeEvery } }
	process := func(p *Policy) { p.Backend = "process" }
	ns := Enforcement{Backend: "namespaces", Limits: "cgroup2", Seccomp: true, Notify: true, Landlock: LandlockMax}
	with := func(e Enforcement, f func(*Enforcement)) Enforcement { f(&e); return e }
	rl := func(e *Enforcement) { e.Limits = "rlimit" }
	// The process backend, under Landlock ABI 7: filesystem, TCP, scopes,
	// and the filter's socket gate.
	proc := func(e *Enforcement) {
		e.Backend, e.LandlockNet, e.LandlockScope, e.Sockets = "process", true, true, true
	}
	// ... and on a host without Landlock.
	bare := func(e *Enforcement) { e.Backend, e.Landlock, e.Sockets = "process", 0, true }
	noLL := func(e *Enforcement) { e.Landlock = 0 }
	noSeccomp := func(p *Policy) { process(p); p.Seccomp.Profile = "none" }
	gaps := []string{"udp isolation", "unix socket isolation"}
	for _, c := range []checkCase{
		// The default policy.
		{name: "default/full", pol: none, host: host(), want: ns},
		{name: "default/no userns", pol: none, host: host(CheckUserNS), err: CheckUserNS, errCtl: "namespaces"},
		{name: "default/old kernel", pol: none, host: host(CheckKernel), err: CheckKernel, errCtl: "namespaces"},
		{name: "default/nothing", pol: none, host: &Host{}, err: CheckKernel, errCtl: "namespaces"},
		{name: "default/no cgroup", pol: none, host: host(CheckCgroup), want: with(ns, rl)},
		{name: "default/no seccomp", pol: none, host: host(CheckSeccomp), err: CheckSeccomp, errCtl: "seccomp"},
		{name: "default/no notify", pol: none, host: host(CheckSeccompNotify), want: with(ns, func(e *Enforcement) { e.Notify = false })},
		{name: "default/no pidfd, landlock", pol: none, host: host(CheckPidfd, CheckLandlock), want: with(ns, noLL)},
		// Explicit limits need a cgroup; best_effort takes rlimits.
		{name: "limits/full", pol: limits, host: host(), want: ns},
		{name: "limits/no cgroup", pol: limits, host: host(CheckCgroup), err: CheckCgroup, errCtl: "memory"},
		{name: "limits/no cgroup, best effort", pol: best(limits), host: host(CheckCgroup), want: with(ns, rl), unmet: []string{"memory", "pids", "cpus"}},
		{name: "cpus/no cgroup", pol: func(p *Policy) { p.CPUs = 1 }, host: host(CheckCgroup), err: CheckCgroup, errCtl: "cpus"},
		// best_effort degrades only what is missing.
		{name: "best effort/full", pol: best(none), host: host(), want: ns},
		{name: "best effort/no userns", pol: best(none), host: host(CheckUserNS), want: with(ns, proc),
			unmet: []string{"namespaces"}},
		{name: "best effort/no userns, landlock", pol: best(none), host: host(CheckUserNS, CheckLandlock), want: with(ns, bare),
			unmet: []string{"namespaces", "filesystem isolation", "network isolation"}},
		{name: "best effort/no seccomp", pol: best(none), host: host(CheckSeccomp), want: with(ns, func(e *Enforcement) { e.Seccomp = false }), unmet: []string{"seccomp"}},
		{name: "best effort/no userns, mounts", pol: best(func(p *Policy) { p.Mounts = []Mount{{Type: MountTmpfs, Target: "/x"}} }), host: host(CheckUserNS), errCtl: "mounts"},
		// The process backend needs no namespaces; it lists the isolation
		// it does not give by default, and refuses what was demanded.
		{name: "process/full", pol: process, host: host(), want: with(ns, proc)},
		{name: "process/no userns", pol: process, host: host(CheckUserNS, CheckKernel), want: with(ns, proc)},
		// The default net is none: without Landlock's TCP rules it is
		// refused, as an explicit net none is.
		{name: "process/no landlock", pol: process, host: host(CheckLandlock), err: CheckLandlockNet, errCtl: "network isolation"},
		// Without a filter (profile none, or a host without seccomp) UDP
		// and unix sockets reach the host: refused, listed under
		// best_effort; net host asks for them.
		{name: "process/seccomp none", pol: noSeccomp, host: host(), errCtl: "udp isolation"},
		{name: "process/seccomp none, best effort", pol: best(noSeccomp), host: host(),
			want: with(ns, func(e *Enforcement) { proc(e); e.Seccomp, e.Sockets = false, false }), unmet: gaps},
		{name: "process/seccomp none, net host", pol: func(p *Policy) { noSeccomp(p); p.Net = NetHost }, host: host(),
			want: with(ns, func(e *Enforcement) { proc(e); e.Seccomp, e.Sockets, e.LandlockNet = false, false, false }), unmet: gaps[1:]},
		{name: "process/no seccomp", pol: process, host: host(CheckSeccomp), err: CheckSeccomp, errCtl: "udp isolation"},
		{name: "process/no seccomp, best effort", pol: best(process), host: host(CheckSeccomp),
			want: with(ns, func(e *Enforcement) { proc(e); e.Seccomp, e.Sockets = false, false }), unmet: append(slices.Clone(gaps), "seccomp")},
		// Landlock: net none needs ABI 4 (TCP rules); loopback is never
		// enforceable (no private loopback); scopes are listed below ABI 6.
		{name: "process/net none", pol: func(p *Policy) { process(p); p.Net = NetNone }, host: host(), want: with(ns, proc)},
		{name: "process/net none, landlock 3", pol: func(p *Policy) { process(p); p.Net = NetNone }, host: host(CheckLandlockNet), err: CheckLandlockNet, errCtl: "network isolation"},
		{name: "process/net none, no landlock", pol: func(p *Policy) { process(p); p.Net = NetNone }, host: host(CheckLandlock), err: CheckLandlockNet, errCtl: "network isolation"},
		// Issue 42: a default the backend cannot apply is refused unless
		// best_effort names its control (here landlock), then listed.
		{name: "process/net none, landlock 5", pol: func(p *Policy) { process(p); p.Net = NetNone }, host: host(CheckLandlockScope), err: CheckLandlockScope, errCtl: "signal isolation"},
		{name: "process/net none, landlock 5, best effort landlock", pol: func(p *Policy) { process(p); p.Net = NetNone; p.BestEffort = DegradeLandlock }, host: host(CheckLandlockScope),
			want: with(ns, func(e *Enforcement) { proc(e); e.Landlock, e.LandlockScope = 5, false }), unmet: []string{"signal isolation"}},
		{name: "process/net none, landlock 5, best effort limits", pol: func(p *Policy) { process(p); p.Net = NetNone; p.BestEffort = DegradeLimits }, host: host(CheckLandlockScope), err: CheckLandlockScope, errCtl: "signal isolation"},
		{name: "process/default net, landlock 3", pol: process, host: host(CheckLandlockNet), err: CheckLandlockNet, errCtl: "network isolation"},
		{name: "process/default net, landlock 3, best effort", pol: best(process), host: host(CheckLandlockNet),
			want: with(ns, func(e *Enforcement) { e.Backend, e.Landlock, e.Sockets = "process", 3, true }), unmet: []string{"network isolation", "signal isolation"}},
		{name: "process/net loopback", pol: func(p *Policy) { process(p); p.Net = NetLoopback }, host: host(), errCtl: "network isolation"},
		{name: "process/net none, no landlock, best effort", pol: best(func(p *Policy) { process(p); p.Net = NetNone }), host: host(CheckLandlock), want: with(ns, bare), unmet: []string{"network isolation", "filesystem isolation"}},
		{name: "process/net host", pol: func(p *Policy) { process(p); p.Net = NetHost }, host: host(), want: with(ns, func(e *Enforcement) { proc(e); e.LandlockNet, e.Sockets = false, false }), unmet: gaps[1:]},
		{name: "process/net host, no landlock", pol: func(p *Policy) { process(p); p.Net = NetHost }, host: host(CheckLandlock), err: CheckLandlock, errCtl: "filesystem isolation"},
		{name: "process/net host, no landlock, best effort landlock", pol: func(p *Policy) { process(p); p.Net = NetHost; p.BestEffort = DegradeLandlock }, host: host(CheckLandlock), want: with(ns, func(e *Enforcement) { bare(e); e.Sockets = false }), unmet: []string{"filesystem isolation"}},
		// Under Landlock a bind of a host path at its own path is a rule;
		// nothing else mounts.
		{name: "process/bind in place", pol: func(p *Policy) { process(p); p.Mounts = []Mount{{Type: MountROBind, Source: "/srv", Target: "/srv"}} }, host: host(), want: with(ns, proc)},
		{name: "process/bind in place, no landlock", pol: func(p *Policy) {
			process(p)
			p.Net = NetHost
			p.Mounts = []Mount{{Type: MountROBind, Source: "/srv", Target: "/srv"}}
		}, host: host(CheckLandlock), errCtl: "mounts"},
		{name: "process/bind elsewhere", pol: func(p *Policy) { process(p); p.Mounts = []Mount{{Type: MountBind, Source: "/srv", Target: "/data"}} }, host: host(), errCtl: "mounts"},
		{name: "process/tmpfs", pol: func(p *Policy) { process(p); p.Mounts = []Mount{{Type: MountTmpfs, Target: "/data"}} }, host: host(), errCtl: "mounts"},
		{name: "process/chdir", pol: func(p *Policy) { process(p); p.Chdir = "/tmp" }, host: host(), errCtl: "chdir"},
		{name: "process/chdir best effort", pol: best(func(p *Policy) { process(p); p.Chdir = "/tmp" }), host: host(), errCtl: "chdir"},
		{name: "process/limits, no cgroup", pol: func(p *Policy) { process(p); limits(p) }, host: host(CheckCgroup), err: CheckCgroup, errCtl: "memory"},
		// Seccomp none asks for nothing.
		{name: "seccomp none/no seccomp", pol: func(p *Policy) { p.Seccomp.Profile = "none" }, host: host(CheckSeccomp), want: with(ns, func(e *Enforcement) { e.Seccomp = false })},
		// The jail enforces every network mode and mounts.
		{name: "net none/full", pol: func(p *Policy) { p.Net = NetNone }, host: host(), want: ns},
		{name: "net host/full", pol: func(p *Policy) { p.Net = NetHost }, host: host(), want: with(ns, func(e *Enforcement) { e.LandlockScope = true })},
		{name: "net host/landlock 5", pol: func(p *Policy) { p.Net = NetHost }, host: host(CheckLandlockScope), want: with(ns, func(e *Enforcement) { e.Landlock = 5 })},
		{name: "net none/no landlock", pol: func(p *Policy) { p.Net = NetNone }, host: host(CheckLandlock), want: with(ns, noLL)},
		{name: "mounts/full", pol: func(p *Policy) { p.Mounts = []Mount{{Type: MountBind, Source: "/srv", Target: "/srv"}} }, host: host(), want: ns},
		{name: "net none/no userns", pol: func(p *Policy) { p.Net = NetNone }, host: host(CheckUserNS), err: CheckUserNS, errCtl: "namespaces"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Policy{}
			c.pol(&p)
			before := *c.host.Clone()
			got, err := Check(p, c.host)
			if c.errCtl != "" {
				var u *UnsupportedError
				if !errors.As(err, &u) || !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrInvalid) || u.Control != c.errCtl || u.Check != c.err || u.Fix == "" {
					t.Fatalf("got %+v, %v; want a refusal of %q (check %q) with a fix", got, err, c.errCtl, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			ne := got.NotEnforced()
			got.Unmet = nil
			if !reflect.DeepEqual(got, c.want) || !slices.Equal(ne, c.unmet) {
				t.Errorf("got %+v, not enforced %q; want %+v, %q", got, ne, c.want, c.unmet)
			}
			if !slices.Equal(before.Checks, c.host.Checks) {
				t.Error("Check changed the host")
			}
		})
	}
}

// Every refusal names all the controls that are not enforceable, the
// first as its control, the others in its reason; an invalid policy is
// invalid whatever the host.
func TestCheckRefusal(t *testing.T) {
	_, err := Check(Policy{Memory: 64 << 20, CPUs: 1}, host(CheckCgroup, CheckSeccomp))
	var u *UnsupportedError
	if !errors.As(err, &u) || u.Control != "memory" || !strings.Contains(u.Reason, "also not enforceable here: cpus, seccomp") ||
		!strings.Contains(u.Error(), "fix: fix cgroup") || !strings.Contains(u.Error(), "--best-effort") {
		t.Errorf("got %v", err)
	}
	if _, err := Check(Policy{Net: "bridge"}, &Host{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid policy on an empty host: %v", err)
	}
}

// Every policy field on every backend is enforced, refused, or listed
// under best_effort: none is dropped silently. A field is enforced when
// Check accepts it without listing it, and the resolved spec then carries
// it (the executor's TestFieldsReachSpec proves that half).
type verdict int

const (
	enforced verdict = iota
	refused          // refused, and listed under best_effort
	required         // refused, even under best_effort
)

type fieldCase struct {
	field string
	set   func(*Policy)
	ns    verdict
	proc  verdict
}

func TestCheckFieldsByBackend(t *testing.T) {
	fields := []fieldCase{
		{"timeout", func(p *Policy) { p.Timeout = 1e9 }, enforced, enforced},
		{"cpu_time", func(p *Policy) { p.CPUTime = 1e9 }, enforced, enforced},
		{"memory", func(p *Policy) { p.Memory = 64 << 20 }, enforced, enforced},
		{"pids", func(p *Policy) { p.Pids = 8 }, enforced, enforced},
		{"cpus", func(p *Policy) { p.CPUs = 0.5 }, enforced, enforced},
		{"file_size", func(p *Policy) { p.FileSize = 1 << 20 }, enforced, enforced},
		{"open_files", func(p *Policy) { p.OpenFiles = 64 }, enforced, enforced},
		{"net none", func(p *Policy) { p.Net = NetNone }, enforced, enforced},
		{"net loopback", func(p *Policy) { p.Net = NetLoopback }, enforced, refused},
		{"net host", func(p *Policy) { p.Net = NetHost }, enforced, enforced},
		{"mounts", func(p *Policy) { p.Mounts = []Mount{{Type: MountTmpfs, Target: "/scratch"}} }, enforced, required},
		{"workspace", func(p *Policy) { p.Workspace = "/srv/ws" }, enforced, enforced},
		{"chdir", func(p *Policy) { p.Chdir = "/tmp" }, enforced, required},
		{"setenv", func(p *Policy) { p.Setenv = map[string]string{"A": "b"} }, enforced, enforced},
		{"env_pass", func(p *Policy) { p.EnvPass = []string{"TERM"} }, enforced, enforced},
		{"max_output", func(p *Policy) { p.MaxOutput = 4096 }, enforced, enforced},
		{"seccomp rules", func(p *Policy) { p.Seccomp.Rules = []SyscallRule{{Names: []string{"getpid"}, Action: ActKill}} }, enforced, enforced},
		// Without the filter the process backend's UDP and unix sockets
		// reach the host.
		{"seccomp none", func(p *Policy) { p.Seccomp.Profile = "none" }, enforced, refused},
	}
	// What the process backend lists without an opt-in: under Landlock
	// (ABI 7) nothing, but with net host the host's pathname unix
	// sockets; without Landlock the filesystem (there its fields run on
	// net host: the default net none is refused, as TestCheck shows).
	procDefaults := func(p Policy, landlock bool) []string {
		switch {
		case landlock && p.Net == NetHost:
			return []string{"unix socket isolation"}
		case landlock:
			return nil
		}
		return []string{"filesystem isolation"}
	}
	for _, landlock := range []bool{true, false} {
		h := host()
		if !landlock {
			h = host(CheckLandlock)
		}
		checkFields(t, h, landlock, fields, procDefaults)
	}
}

// checkFields is TestCheckFieldsByBackend on one host.
func checkFields(t *testing.T, h *Host, landlock bool, fields []fieldCase, procDefaults func(Policy, bool) []string) {
	t.Helper()
	for _, f := range fields {
		for _, backend := range []string{"namespaces", "process"} {
			want := f.ns
			if backend == "process" {
				want = f.proc
			}
			p := Policy{Backend: backend}
			if !landlock && backend == "process" {
				// The host's filesystem, accepted: the field's own verdict
				// is what is judged.
				p.Net, p.BestEffort = NetHost, DegradeLandlock
			}
			f.set(&p)
			switch {
			case !landlock && f.field == "net none" && backend == "process":
				want = refused
			case f.field == "seccomp none" && backend == "process" && p.Net == NetHost:
				want = enforced // net host asks for the host's sockets
			}
			got, err := Check(p, h)
			base := []string(nil)
			if backend == "process" {
				base = procDefaults(p, landlock)
			}
			switch want {
			case enforced:
				if err != nil || !slices.Equal(got.NotEnforced(), base) {
					t.Errorf("%s on %s (landlock %v): %v, not enforced %q; want enforced", f.field, backend, landlock, err, got.NotEnforced())
				}
			case refused, required:
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s on %s: %v; want refused", f.field, backend, err)
				}
				p.BestEffort = degradeEvery
				got, err = Check(p, h)
				if want == required && !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s on %s, best effort: %v; want refused", f.field, backend, err)
				}
				if want == refused && (err != nil || slices.Equal(got.NotEnforced(), base)) {
					t.Errorf("%s on %s, best effort: %v, not enforced %q; want it listed", f.field, backend, err, got.NotEnforced())
				}
			}
		}
	}
}
