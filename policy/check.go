package policy

import (
	"fmt"
	"path"
	"slices"
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
	// backend it chose cannot apply (the process backend's filesystem
	// without Landlock, its signals without scopes): not refused, only
	// reported.
	Default bool `json:"default,omitempty"`
	// Required says best_effort cannot waive it: without it the program
	// would run somewhere else than asked (a mount, a working directory),
	// not merely less confined.
	Required bool `json:"required,omitempty"`
	// Partial says the control is enforced but for a part the policy
	// itself gives up (the process backend's net host reaches the host's
	// pathname unix sockets): listed, never refused.
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
	// Sockets: the seccomp filter refuses (EACCES) every socket but TCP
	// over IPv4 and IPv6, every socket pair but unix stream and seqpacket
	// ones, listen, and TCP Fast Open's sends (seccomp.Options.SocketGate):
	// the process backend off the host's network, where UDP, unix,
	// netlink and the other families would reach the host, and so would
	// TCP by the two paths Landlock does not check (listen's own bind, a
	// Fast Open connect).
	Sockets bool `json:"sockets,omitempty"`
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
// and everything h (or the backend) cannot enforce. An unmet control is
// refused, the defaults the chosen backend cannot apply included: the
// error is an *UnsupportedError naming the first (a Required one first;
// the others in its reason) with its fix, which names the --best-effort
// value that would accept them. Each control best_effort names (Degrade:
// limits, seccomp, namespaces, landlock, network) is listed in Unmet
// instead; Required ones are always refused, and Partial ones (what the
// policy itself gave up) always listed. An invalid p is ErrInvalid.
// Check has no side effects.
//
// In the table, "best_effort NAME" is the name that waives a refusal.
//
// The fields, by backend:
//
//	field                      namespaces              process
//	timeout, cpu_time,         enforced                enforced
//	file_size, open_files,
//	max_output, setenv,
//	env_pass, workspace
//	memory, pids               cgroup; without one: explicit refused (best_effort limits: rlimits, listed),
//	                           default by rlimits
//	cpus                       cgroup; without one refused (best_effort limits: listed)
//	seccomp                    needs CheckSeccomp (best_effort seccomp: listed); "none" asks for nothing
//	net "", none               own namespace           TCP denied by Landlock (CheckLandlockNet),
//	                                                   every other socket by the seccomp filter
//	                                                   (Sockets: UDP, unix, netlink, raw, ...);
//	                                                   without either refused (best_effort network)
//	net loopback               own namespace           refused (best_effort network: listed)
//	net host                   host's                  host's (pathname unix sockets listed)
//	filesystem                 own root, and Landlock  Landlock (CheckLandlock): system dirs read
//	                           where the host has it   and execute, the workspace writable; without
//	                                                   it refused (best_effort landlock: listed)
//	signals                    own pid namespace       Landlock scopes (CheckLandlockScope);
//	                                                   without them refused (best_effort landlock)
//	abstract unix sockets      own net namespace       the seccomp filter (Sockets), and Landlock
//	                                                   scopes
//	mounts                     enforced                under Landlock binds of a host path at
//	                                                   its own path (ruleset rules); all else
//	                                                   refused, always
//	chdir                      enforced                refused unless /workspace (the default)
//	backend "", namespaces     needs CheckKernel and CheckUserNS; without them refused
//	                           (best_effort namespaces: the process backend, listed)
//
// Under net host the process backend's program reaches the host's
// pathname unix sockets its uid may connect to (the jail's, only those
// bound in): listed as Partial, the explicit choice of net host.
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
		if p.BestEffort.Has(DegradeNamespaces) {
			e.Backend = "process"
			if h.LandlockABI() < LandlockFS {
				unmet = append(unmet, Unmet{Control: "filesystem isolation", Field: "backend", Check: u.Check, Reason: "the process backend runs on the host's filesystem", Fix: u.Fix})
			}
		}
	}
	e.Landlock = h.LandlockABI()
	if e.Process() {
		var u []Unmet
		u, e.LandlockNet, e.LandlockScope, e.Sockets = processUnmet(p, e.Backend != p.Backend, h)
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
// signals (scope), and whether its seccomp filter refuses every socket
// but TCP's (sockets). fallback says best_effort chose it (the policy
// asked for the jail).
func processUnmet(p Policy, fallback bool, h *Host) (out []Unmet, net, scope, sockets bool) {
	const fix = "use the namespaces backend (the default)"
	abi := h.LandlockABI()
	ll := h.Get(CheckLandlock)
	llNet := h.Get(CheckLandlockNet)
	// TCP is denied wherever the policy does not take the host's network
	// and the kernel has network rules: net loopback under best_effort
	// too, the nearest it can have.
	net = p.Net != NetHost && abi >= LandlockNet && h.Has(CheckLandlockNet)
	// Every other socket, there, is the filter's to refuse: UDP, raw,
	// netlink and packet sockets, and unix ones (Landlock checks no
	// connect to a pathname socket), wherever the filter is loaded (the
	// condition Check gives Enforcement.Seccomp).
	sockets = p.Net != NetHost && p.Seccomp.Profile != "none" && h.Has(CheckSeccomp)
	switch {
	case p.Net == NetHost:
		// The host's network, asked for; and beyond the jail's, its
		// pathname unix sockets (the jail reaches those bound in only).
		// Without Landlock, filesystem isolation below covers them.
		if abi >= LandlockFS {
			out = append(out, Unmet{Control: "unix socket isolation", Field: "net", Partial: true,
				Reason: "net host: the process backend's program reaches the host's pathname unix sockets its uid may connect to", Fix: fix + ", or net none"})
		}
	case p.Net == NetAllow:
		// No waiver: without a network namespace of its own the program
		// would have the host's whole network, not the allow-list.
		out = append(out, Unmet{Control: "network isolation", Field: "net", Required: true,
			Reason: "net allow needs a network namespace of its own (its only way out is the proxy); the process backend shares the host's",
			Fix:    fix})
	case p.Net == NetLoopback && !fallback:
		out = append(out, Unmet{Control: "network isolation", Field: "net",
			Reason: "net loopback cannot be enforced: the process backend shares the host's network namespace (Landlock denies TCP, it gives no private loopback)",
			Fix:    fix + ", or net none, or net host to accept the host's network"})
	case !net:
		// Refused, the default net included (its default is none), unless
		// best_effort: under a fallback, the jail's refusal names the cause.
		mode := "net " + string(p.Network())
		if p.Net == "" {
			mode = "the default net none"
		}
		out = append(out, Unmet{Control: "network isolation", Field: "net", Check: CheckLandlockNet,
			Reason: fmt.Sprintf("%s cannot be enforced: the process backend shares the host's network namespace, and %s: TCP reaches the host", mode, landlockMissing(llNet, LandlockNet, "network rules")),
			Fix:    orFix(llNet.Fix, "Linux 6.7 or newer with Landlock enabled") + "; or " + fix + ", or net host to accept the host's network"})
	}
	if p.Net != NetHost && p.Net != NetAllow && !sockets {
		why, check, sfix := "the seccomp filter, which refuses them, is off (profile none)", CheckID(""), "the default seccomp profile"
		if p.Seccomp.Profile != "none" {
			c := h.Get(CheckSeccomp)
			why, check, sfix = "the host cannot load the seccomp filter that refuses them: "+c.Detail, CheckSeccomp, orFix(c.Fix, "a kernel with seccomp filters")
		}
		sfix += ", or " + fix + ", or net host to accept the host's network"
		out = append(out,
			Unmet{Control: "udp isolation", Field: "net", Check: check, Fix: sfix,
				Reason: "the process backend's program reaches the host with UDP, raw, netlink and packet sockets (Landlock confines TCP only), because " + why},
			Unmet{Control: "unix socket isolation", Field: "net", Check: check, Fix: sfix,
				Reason: "the process backend's program connects to the host's pathname unix sockets its uid may reach (Landlock does not check that connect), because " + why})
	}
	if abi < LandlockFS && !fallback {
		out = append(out, Unmet{Control: "filesystem isolation", Field: "backend", Check: CheckLandlock, Reason: "the process backend runs on the host's filesystem, and " + landlockMissing(ll, LandlockFS, "filesystem rules"), Fix: fix, Default: true})
	}
	if scope = abi >= LandlockScope && h.Has(CheckLandlockScope); !scope && abi >= LandlockFS {
		reason := "the program can signal the host's processes of its uid"
		if !sockets {
			reason += " and reach its abstract unix sockets"
		}
		out = append(out, Unmet{Control: "signal isolation", Field: "backend", Check: CheckLandlockScope, Default: true,
			Reason: reason + " (its reaper too, which it can then stop or kill, so that its daemons outlive the run): " + landlockMissing(h.Get(CheckLandlockScope), LandlockScope, "scopes"), Fix: fix})
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
	return out, net, scope, sockets
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
				Fix:    orFix(c.Fix, "run as root, or in a delegated cgroup v2")})
		}
	}
	return "rlimit", out
}

// refuse is the error for unmet controls: the first one not waived
// (every Required one, and every other one whose control best_effort
// does not name, the defaults the backend cannot apply included, so that
// nothing is listed in a result's not_enforced that the caller did not
// accept; a Partial one is the policy's own choice), the others named in
// its reason, and in its fix the --best-effort value that would accept
// them all.
func refuse(unmet []Unmet, bestEffort Degrade) error {
	var first *UnsupportedError
	var others []string
	var need Degrade
	// A Required one first: no best_effort can waive it, so it is the
	// one a caller must change.
	unmet = slices.Clone(unmet)
	slices.SortStableFunc(unmet, func(a, b Unmet) int {
		switch {
		case a.Required == b.Required:
			return 0
		case a.Required:
			return -1
		}
		return 1
	})
	for _, u := range unmet {
		d := degradeFor(u.Control)
		if u.Partial || !u.Required && bestEffort.Has(d) {
			// A partial one is what the policy gave up itself (net host):
			// listed, its choice.
			continue
		}
		if first == nil {
			first = u.Err()
		} else {
			others = append(others, u.Control)
		}
		if !u.Required {
			need |= d
		}
	}
	if first == nil {
		return nil
	}
	if len(others) > 0 {
		first.Reason += "; also not enforceable here: " + strings.Join(others, ", ")
	}
	if need != 0 {
		first.Fix = orFix(first.Fix, "a host that can enforce it") + "; or " + (bestEffort | need).Flag() + " to run with it listed as not enforced"
	}
	return first
}

func orFix(fix, def string) string {
	if fix == "" {
		return def
	}
	return fix
}
