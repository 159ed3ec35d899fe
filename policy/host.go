package policy

// CheckID names one host capability the probe checks (package
// policy/hostprobe fills a Host with them). IDs are stable: they appear
// in `airlock doctor --json`, in UnsupportedError.Check and in Unmet.
type CheckID string

const (
	// CheckKernel: a kernel new enough for the jail (the new mount API,
	// mount_setattr: Linux 5.12).
	CheckKernel CheckID = "kernel"
	// CheckUserNS: user namespaces this user may create (not disabled by
	// a sysctl or an LSM).
	CheckUserNS CheckID = "userns"
	// CheckCgroup: a cgroup where per-run cgroups can be made (Host.Limits
	// says which version).
	CheckCgroup CheckID = "cgroup"
	// CheckSeccomp: seccomp filters with the kill and errno actions, and
	// libseccomp to compile them.
	CheckSeccomp CheckID = "seccomp"
	// CheckSeccompNotify: seccomp user notification, with which a kill
	// rule's result names its syscall. Optional: without it kill rules
	// still kill, unnamed.
	CheckSeccompNotify CheckID = "seccomp_notify"
	// CheckPidfd: pidfd_open (race-free kill and wait). Optional.
	CheckPidfd CheckID = "pidfd"
	// CheckLandlock: Landlock filesystem rules (ABI 1, Linux 5.13). The
	// process backend's filesystem isolation; a second layer in the jail.
	// Optional: without it the process backend lists filesystem isolation
	// as not enforced.
	CheckLandlock CheckID = "landlock"
	// CheckLandlockNet: Landlock network rules (ABI 4, Linux 6.7): the
	// process backend denies TCP bind and connect unless net host. An
	// explicit net none on the process backend needs it.
	CheckLandlockNet CheckID = "landlock_net"
	// CheckLandlockScope: Landlock scopes (ABI 6, Linux 6.12): the process
	// backend cannot reach the host's abstract unix sockets nor signal
	// its processes. Optional.
	CheckLandlockScope CheckID = "landlock_scope"
)

// The Landlock ABI versions airlock uses: rules on paths, on TCP ports,
// scopes (abstract unix sockets, signals), then the ones that close the
// process backend's last gaps (pathname unix sockets, UDP).
const (
	LandlockFS    = 1
	LandlockNet   = 4
	LandlockScope = 6
	LandlockUnix  = 9
	LandlockUDP   = 10
	// LandlockMax is the newest ABI airlock writes rulesets for: a newer
	// kernel is used at this one (Landlock is backward compatible).
	LandlockMax = 7
)

// Capability is the probe's answer for one check: whether this host has
// it, what was seen, and what would fix it when it is missing.
type Capability struct {
	ID CheckID `json:"id"`
	// Name is the check's human name ("user namespaces").
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	// Needed says the default policy depends on it; a missing optional
	// capability only narrows what a policy may ask for.
	Needed bool `json:"needed"`
}

// Host describes what a host can enforce, for one user: data only, made
// by policy/hostprobe (or by hand, in tests), judged by Check. The zero
// value is a host with nothing: every control is unmet.
type Host struct {
	Kernel     string `json:"kernel"`
	UID        int    `json:"uid"`
	CgroupMode string `json:"cgroup_mode"`
	// Limits is where per-run limits go when CheckCgroup is OK: "cgroup2"
	// or "cgroup1".
	Limits string `json:"limits,omitempty"`
	// Landlock is the kernel's Landlock ABI version; 0 = none. Check
	// trusts it only where CheckLandlock is OK.
	Landlock int          `json:"landlock"`
	Checks   []Capability `json:"checks"`
}

// LandlockABI is the Landlock ABI a ruleset is written for on this host:
// the kernel's, at most LandlockMax; 0 when CheckLandlock is missing.
func (h *Host) LandlockABI() int {
	if !h.Has(CheckLandlock) {
		return 0
	}
	return max(min(h.Landlock, LandlockMax), 0)
}

// Get returns the check with id; a check the host does not list is
// missing (OK false): an inconclusive probe fails closed.
func (h *Host) Get(id CheckID) Capability {
	for _, c := range h.Checks {
		if c.ID == id {
			return c
		}
	}
	return Capability{ID: id, Name: string(id), Detail: "not probed"}
}

// Has reports whether the check with id is there.
func (h *Host) Has(id CheckID) bool { return h.Get(id).OK }

// Set replaces (or adds) a check: how a caller records what it found
// itself (the executor, its own cgroup parent).
func (h *Host) Set(c Capability) {
	for i := range h.Checks {
		if h.Checks[i].ID == c.ID {
			h.Checks[i] = c
			return
		}
	}
	h.Checks = append(h.Checks, c)
}

// Clone returns a copy that shares nothing with h.
func (h *Host) Clone() *Host {
	c := *h
	c.Checks = append([]Capability(nil), h.Checks...)
	return &c
}

// OK reports whether every needed capability is there.
func (h *Host) OK() bool {
	for _, c := range h.Checks {
		if c.Needed && !c.OK {
			return false
		}
	}
	return true
}
