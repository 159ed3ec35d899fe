package executor

import (
	"errors"

	"github.com/airlock-sandbox/airlock/policy"
)

// Capabilities is what this Executor can enforce on this host, from the
// host probe and the discovery done by New: what a caller may rely on.
type Capabilities struct {
	// Backend is "namespaces": user, pid, mount, ipc, uts, cgroup and
	// (unless the policy asks for the host's) net namespaces.
	Backend string `json:"backend"`
	// Filesystem isolation: a private read-only root (pivot_root).
	Filesystem bool `json:"filesystem"`
	// Network isolation: a private network namespace by default.
	Network bool `json:"network"`
	// Limits is how memory, tasks and CPU are bounded: "cgroup2",
	// "cgroup1", or "rlimit" (then explicit limits need best_effort).
	Limits string `json:"limits"`
	// LimitsNote says why there is no cgroup, when there is none.
	LimitsNote string `json:"limits_note,omitempty"`
	// Seccomp filters are enforced; KillNames says kill rules report the
	// syscall's name.
	Seccomp   bool `json:"seccomp"`
	KillNames bool `json:"kill_names"`
	// Sessions keep a workspace across executions.
	Sessions bool `json:"sessions"`
	// Namespaces says the jail can run here; NamespacesNote says why not.
	// Without it only the process backend runs (by policy choice or
	// best_effort), isolating nothing but rlimits, no_new_privs, seccomp,
	// an unprivileged uid and the process-group kill.
	Namespaces     bool   `json:"namespaces"`
	NamespacesNote string `json:"namespaces_note,omitempty"`
	// Landlock is the Landlock ABI rulesets are written for here, 0 =
	// none: the process backend's filesystem and network isolation, and
	// a second layer in the jail.
	Landlock int `json:"landlock"`
	// Languages installed, by canonical name.
	Languages []string `json:"languages"`
	// Kernel release.
	Kernel string `json:"kernel"`
}

// Capabilities reports what this Executor can enforce: a summary of its
// Host, which policy.Check judges requests by.
func (e *Executor) Capabilities() Capabilities {
	_, jailErr := policy.Check(policy.Policy{}, e.host)
	jail := !isJail(jailErr)
	c := Capabilities{
		Backend:    "namespaces",
		Filesystem: jail,
		Network:    jail,
		Namespaces: jail,
		Limits:     "rlimit",
		Seccomp:    e.host.Has(policy.CheckSeccomp),
		KillNames:  e.notify,
		Sessions:   true,
		Languages:  names(e.langs()),
		Kernel:     e.host.Kernel,
		Landlock:   e.host.LandlockABI(),
	}
	if !jail {
		c.Backend, c.NamespacesNote = "process", jailErr.Error()
	}
	if e.host.Has(policy.CheckCgroup) && e.host.Limits != "" {
		c.Limits = e.host.Limits
	} else {
		cg := e.host.Get(policy.CheckCgroup)
		c.LimitsNote = (&policy.UnsupportedError{Control: "cgroup limits", Check: cg.ID, Reason: cg.Detail, Fix: cg.Fix}).Error()
	}
	return c
}

// isJail reports whether err refuses the namespace jail itself.
func isJail(err error) bool {
	var u *policy.UnsupportedError
	return errors.As(err, &u) && u.Control == "namespaces"
}

// SupportsLanguage reports whether name (or an alias) is installed.
func (e *Executor) SupportsLanguage(name string) bool {
	_, ok := e.langs()[name]
	return ok
}

// CgroupDir is the directory per-run cgroups are made in ("" = none).
func (e *Executor) CgroupDir() string {
	if e.cgroups == nil {
		return ""
	}
	return e.cgroups.Dir()
}
