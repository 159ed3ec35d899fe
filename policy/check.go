package policy

import (
	"fmt"
	"path"
	"strings"
)

// Unmet is one control a host or a backend cannot enforce for a policy.
type Unmet struct {
	// Control is what is not enforced, as a result's not_enforced names
	// it: "namespaces", "filesystem isolation", "network isolation",
	// "memory", "pids", "cpus", "seccomp", "mounts", "chdir".
	Control string `json:"control"`
	// Field is the policy field that asks for it ("backend", "net",
	// "memory", ...).
	Field string `json:"field"`
	// Check is the host check that is missing; "" when the chosen backend
	// cannot enforce the control on any host.
	Check  CheckID `json:"check,omitempty"`
	Reason string  `json:"reason"`
	Fix    string  `json:"fix,omitempty"`
	// Default says the policy left the field at its default, which the
	// backend it chose cannot apply (the process backend's network): not
	// refused, only reported.
	Default bool `json:"default,omitempty"`
	// Required says best_effort cannot waive it: without it the program
	// would run somewhere else than asked (a mount, a working directory),
	// not merely less confined.
	Required bool `json:"required,omitempty"`
	// Partial says the control is enforced but for a part the host's
	// mechanism cannot reach (Landlock below ABI 10 has no UDP rules):
	// listed, never refused.
	Partial bool `json:"partial,omitempty"`
}

// Err is the refusal of u.
func (u Unmet) Err() *UnsupportedError {
	return &UnsupportedError{Control: u.Control, Check: u.Check, Reason: u.Reason, Fix: u.Fix}
}

// Enforcement is Check's answer: how a policy runs on a host.
type Enforcement struct {
	// Backend is "namespaces" (the jail) or "process".
	Backend string `json:"backend"`
	// Limits is how memory, tasks and CPU are bounded: "cgroup2",
	// "cgroup1", or "rlimit" (per-process rlimits, no CPU rate).
	Limits string `json:"limits"`
	// Seccomp says the policy's filter is loaded: false for profile
	// "none", or when the host has no seccomp and best_effort waived it.
	Seccomp bool `json:"seccomp"`
	// Notify says kill rules can name their syscall (user notification).
	Notify bool `json:"notify"`
	// Landlock is the Landlock ABI the run's ruleset is written for, 0 =
	// none: the process backend's filesystem (and, with LandlockNet and
	// LandlockScope, network, socket and signal) isolation, and a second
	// layer under the jail's own root, wherever the host has Landlock.
	Landlock int `json:"landlock"`
	// LandlockNet: the ruleset denies TCP bind and connect (the process
	// backend, but with net host).
	LandlockNet bool `json:"landlock_net,omitempty"`
	// LandlockScope: the ruleset keeps the program from the abstract unix
	// sockets and the processes outside it (the process backend; the
	// jail on the host's network).
	LandlockScope bool `json:"landlock_scope,omitempty"`
	// Unmet is every control not enforced: defaults the chosen backend
	// cannot apply, and, with best_effort, what the host lacks.
	Unmet []Unmet `json:"unmet,omitempty"`
	// Weakened is each way the policy itself is weaker than the default
	// policy (see Policy.Weakenings; the executor adds the seccomp rules'
	// with seccomp.Weakenings): not refused, never silent.
	Weakened []string `json:"weakened,omitempty"`
}

// Process reports whether the process backend runs.
func (e Enforcement) Process() bool { return e.Backend == "process" }

// NotEnforced is Unmet by control name, for a result's not_enforced.
func (e Enforcement) NotEnforced() []string {
	var out []string
	for _, u := range e.Unmet {
		out = append(out, u.Control)
	}
	return out
}

// Check decides how p runs on host h, the one place that does: which
// backend, how limits are applied, whether the seccomp filter is loaded,
// and everything h (or the backend) cannot enforce. Without best_effort
// an unmet control the policy asked for is refused: the error is an
// *UnsupportedError naming the first (and, in its reason, the others)
// with its fix. With best_effort such controls are listed in Unmet
// instead, except Required ones, which are always refused. Defaults the
// chosen backend cannot apply are listed, never refused. An invalid p is
// ErrInvalid. Check has no side effects.
//
// The fields, by backend:
//
//	field                      namespaces              process
//	timeout, cpu_time,         enforced                enforced
//	file_size, open_files,
//	max_output, setenv,
//	env_pass, workspace
//	memory, pids               cgroup; without one: explicit refused (best_effort: rlimits, listed),
//	                           default by rlimits
//	cpus                       cgroup; without one refused (best_effort: listed)
//	seccomp                    needs CheckSeccomp (best_effort: listed); "none" asks for nothing
//	net ""                     own namespace           TCP denied by Landlock (CheckLandlockNet);
//	                                                   without it the host's network, listed
//	net none                   own namespace           needs CheckLandlockNet: TCP denied; without
//	                                                   it refused (best_effort: listed)
//	net loopback               own namespace           refused (best_effort: listed)
//	net host                   host's                  host's
//	filesystem                 own root, and Landlock  Landlock (CheckLandlock): system dirs read
//	                           where the host has it   and execute, the workspace writable; without
//	                                                   it the host's, listed as a default
//	signals, abstract sockets  own pid, net namespace  Landlock scopes (CheckLandlockScope);
//	                                                   without them listed as a default
//	mounts                     enforced                under Landlock binds of a host path at
//	                                                   its own path (ruleset rules); all else
//	                                                   refused, always
//	chdir                      enforced                refused unless /workspace (the default)
//	backend "", namespaces     needs CheckKernel and CheckUserNS; without them refused
//	                           (best_effort: the process backend, listed)
//
// Where the process backend runs under Landlock below ABI 10 (9), UDP
// (pathname unix sockets) stay reachable: listed as Partial, never
// refused.
func Check(p Policy, h *Host) (Enforcement, error) {
	if err := p.Validate(); err != nil {
		return Enforcement{}, err
	}
	var unmet []Unmet
	e := Enforcement{Backend: "namespaces", Notify: h.Has(CheckSeccompNotify)}
	if p.Backend == "process" {
		e.Backend = "process"
	} else if u, ok := jail(h); !ok {
		unmet = append(unmet, u)
		if p.BestEffort {
			e.Backend = "process"
			if h.LandlockABI() < LandlockFS {
				unmet = append(unmet, Unmet{Control: "filesystem isolation", Field: "backend", Check: u.Check, Reason: "the process backend runs on the host's filesystem", Fix: u.Fix})
			}
		}
	}
	e.Landlock = h.LandlockABI()
	if e.Process() {
		var u []Unmet
		u, e.LandlockNet, e.LandlockScope = processUnmet(p, e.Backend != p.Backend, h)
		unmet = append(unmet, u...)
	} else {
		// The jail's own namespaces isolate the network, abstract sockets
		// and processes; on the host's network its abstract sockets are
		// the host's.
		e.LandlockScope = p.Network() == NetHost && e.Landlock >= LandlockScope
	}
	var lim []Unmet
	e.Limits, lim = limits(p, h)
	unmet = append(unmet, lim...)
	e.Seccomp = p.Seccomp.Profile != "none"
	if c := h.Get(CheckSeccomp); e.Seccomp && !c.OK {
		unmet = append(unmet, Unmet{Control: "seccomp", Field: "seccomp", Check: CheckSeccomp, Reason: c.Detail, Fix: orFix(c.Fix, "a kernel with seccomp filters, and airlock built with cgo and libseccomp")})
		e.Seccomp = false
	}
	if err := refuse(unmet, p.BestEffort); err != nil {
		return Enforcement{}, err
	}
	e.Unmet = unmet
	return e, nil
}

// jail says whether the namespace jail can run on h: the kernel, then
// user namespaces.
func jail(h *Host) (Unmet, bool) {
	for _, id := range []CheckID{CheckKernel, CheckUserNS} {
		if c := h.Get(id); !c.OK {
			return Unmet{Control: "namespaces", Field: "backend", Check: id, Reason: c.Name + ": " + c.Detail,
				Fix: orFix(c.Fix, "a host with user namespaces") + "; or choose the process backend (no isolation)"}, false
		}
	}
	return Unmet{}, true
}

// processUnmet is what the process backend cannot do for p on h, and
// whether its Landlock ruleset denies TCP (net) and scopes sockets and
// signals (scope). fallback says best_effort chose it (the policy asked
// for the jail).
func processUnmet(p Policy, fallback bool, h *Host) (out []Unmet, net, scope bool) {
	const fix = "use the namespaces backend (the default)"
	abi := h.LandlockABI()
	ll := h.Get(CheckLandlock)
	llNet := h.Get(CheckLandlockNet)
	// TCP is denied wherever the policy does not take the host's network
	// and the kernel has network rules: net loopback under best_effort
	// too, the nearest it can have.
	net = p.Net != NetHost && abi >= LandlockNet && h.Has(CheckLandlockNet)
	switch {
	case p.Net == NetHost:
	case p.Net == NetAllow:
		// No waiver: without a network namespace of its own the program
		// would have the host's whole network, not the allow-list.
		out = append(out, Unmet{Control: "network isolation", Field: "net", Required: true,
			Reason: "net allow needs a network namespace of its own (its only way out is the proxy); the process backend shares the host's",
			Fix:    fix})
	case p.Net == NetLoopback && !fallback:
		out = append(out, Unmet{Control: "network isolation", Field: "net",
			Reason: "net loopback cannot be enforced: the process backend shares the host's network namespace (Landlock denies TCP, it gives no private loopback)",
			Fix:    fix + ", or net none, or net host to accept the host's network, or best_effort (--best-effort) to run with it listed as not enforced"})
	case net:
		if abi < LandlockUDP {
			out = append(out, Unmet{Control: "udp isolation", Field: "net", Check: CheckLandlockNet, Partial: true,
				Reason: fmt.Sprintf("landlock ABI %d denies TCP only: UDP needs ABI %d", abi, LandlockUDP), Fix: fix})
		}
	case p.Net == "" || fallback:
		// The policy left the network at its default, or asked for the
		// jail, whose refusal above names the cause.
		out = append(out, Unmet{Control: "network isolation", Field: "net", Check: CheckLandlockNet, Reason: "the process backend shares the host's network namespace, and " + landlockMissing(llNet, LandlockNet, "network rules"), Fix: fix, Default: !fallback})
	default:
		out = append(out, Unmet{Control: "network isolation", Field: "net", Check: CheckLandlockNet,
			Reason: fmt.Sprintf("net %s cannot be enforced: the process backend shares the host's network namespace, and %s", p.Net, landlockMissing(llNet, LandlockNet, "network rules")),
			Fix:    orFix(llNet.Fix, "Linux 6.7 or newer with Landlock enabled") + "; or " + fix + ", or net host to accept the host's network, or best_effort (--best-effort) to run with it listed as not enforced"})
	}
	switch {
	case abi >= LandlockFS:
		if abi < LandlockUnix {
			out = append(out, Unmet{Control: "unix socket isolation", Field: "backend", Check: CheckLandlock, Partial: true,
				Reason: fmt.Sprintf("landlock ABI %d cannot deny connecting to the host's pathname unix sockets: that needs ABI %d", abi, LandlockUnix), Fix: fix})
		}
	case !fallback:
		out = append(out, Unmet{Control: "filesystem isolation", Field: "backend", Check: CheckLandlock, Reason: "the process backend runs on the host's filesystem, and " + landlockMissing(ll, LandlockFS, "filesystem rules"), Fix: fix, Default: true})
	}
	if scope = abi >= LandlockScope && h.Has(CheckLandlockScope); !scope && abi >= LandlockFS {
		out = append(out, Unmet{Control: "signal isolation", Field: "backend", Check: CheckLandlockScope, Default: true,
			Reason: "the program can signal the host's processes of its uid (its reaper too, which it can then stop or kill, so that its daemons outlive the run) and reach its abstract unix sockets: " + landlockMissing(h.Get(CheckLandlockScope), LandlockScope, "scopes"), Fix: fix})
	}
	if len(p.Mounts) > 0 && !landlockBinds(p.Mounts, abi) {
		reason := "the process backend cannot mount: it runs on the host's filesystem"
		if abi >= LandlockFS {
			reason += "; under Landlock it grants a bind's host path at that same path (--ro-bind /data), no tmpfs and no other target"
		}
		out = append(out, Unmet{Control: "mounts", Field: "mounts", Reason: reason, Fix: fix, Required: true})
	}
	if p.Chdir != "" && p.Chdir != "/workspace" {
		out = append(out, Unmet{Control: "chdir", Field: "chdir", Reason: fmt.Sprintf("the process backend runs in its workspace directory, not %s", p.Chdir), Fix: fix + ", or change directory in the program", Required: true})
	}
	return out, net, scope
}

// landlockBinds reports whether the process backend can give mounts
// under Landlock ABI abi: binds only, each of a host path at that same
// path, granted by the ruleset (read and execute, or read-write).
func landlockBinds(mounts []Mount, abi int) bool {
	if abi < LandlockFS {
		return false
	}
	for _, m := range mounts {
		if m.Type == MountTmpfs || path.Clean(m.Source) != m.Target {
			return false
		}
	}
	return true
}

// landlockMissing says which Landlock ABI a control needs and what the
// host has.
func landlockMissing(c Capability, abi int, what string) string {
	return fmt.Sprintf("landlock ABI %d for %s is missing (%s)", abi, what, c.Detail)
}

// limits is how p's limits are applied on h, and the explicit ones h
// cannot apply without a cgroup.
func limits(p Policy, h *Host) (string, []Unmet) {
	c := h.Get(CheckCgroup)
	if c.OK && h.Limits != "" {
		return h.Limits, nil
	}
	var out []Unmet
	for _, l := range []struct {
		name, rlimit string
		set          bool
	}{
		{"memory", "per-process RLIMIT_DATA instead", p.Memory != 0},
		{"pids", "RLIMIT_NPROC instead", p.Pids != 0},
		{"cpus", "no rlimit can rate CPU", p.CPUs > 0},
	} {
		if l.set {
			out = append(out, Unmet{Control: l.name, Field: l.name, Check: CheckCgroup,
				Reason: fmt.Sprintf("an explicit %s limit needs a cgroup (best_effort: %s): %s", l.name, l.rlimit, c.Detail),
				Fix:    orFix(c.Fix, "run as root, or in a delegated cgroup v2") + "; or pass --best-effort to accept per-process rlimits"})
		}
	}
	return "rlimit", out
}

// refuse is the error for unmet controls: the first one not waived
// (every Required one, and without best_effort every one the policy
// asked for), the others named in its reason.
func refuse(unmet []Unmet, bestEffort bool) error {
	var first *UnsupportedError
	var others []string
	for _, u := range unmet {
		if u.Default || u.Partial || bestEffort && !u.Required {
			continue
		}
		if first == nil {
			first = u.Err()
		} else {
			others = append(others, u.Control)
		}
	}
	if first == nil {
		return nil
	}
	if len(others) > 0 {
		first.Reason += "; also not enforceable here: " + strings.Join(others, ", ")
	}
	return first
}

func orFix(fix, def string) string {
	if fix == "" {
		return def
	}
	return fix
}
