package nsjail

import "github.com/airlock-sandbox/airlock/egress"

// Status is the outcome of a run.
type Status string

const (
	StatusOK               Status = "ok"                // exited 0
	StatusExited           Status = "exited"            // exited non-zero
	StatusSignaled         Status = "signaled"          // killed by a signal it raised or received inside
	StatusTimeout          Status = "timeout"           // wall-clock or CPU-time limit
	StatusMemoryLimit      Status = "memory_limit"      // the OOM killer fired in the sandbox's cgroup
	StatusSeccompViolation Status = "seccomp_violation" // killed by the seccomp filter
	StatusOutputLimit      Status = "output_limit"      // a captured stream passed its cap
	StatusSetupError       Status = "setup_error"       // the sandbox could not be built; the program never ran
)

// Result is the one structured outcome of a run. Its JSON form is
// airlock's result contract.
type Result struct {
	Status          Status   `json:"status"`
	ExitCode        int      `json:"exit_code"`
	Signal          string   `json:"signal"`
	Stdout          string   `json:"stdout"`
	Stderr          string   `json:"stderr"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	StderrTruncated bool     `json:"stderr_truncated"`
	WallTimeMS      int64    `json:"wall_time_ms"`
	CPUTimeMS       int64    `json:"cpu_time_ms"`
	MemoryPeakBytes int64    `json:"memory_peak_bytes"`
	SeccompSyscall  string   `json:"seccomp_syscall"`
	Enforced        Enforced `json:"enforced"`
	Error           string   `json:"error,omitempty"`
	// Network lists, with net allow, every connection the program asked
	// the egress proxy for, in order: host, port, address, verdict,
	// bytes up and down, duration. NetworkDropped counts those past the
	// log's 4096 entries.
	Network        []egress.Conn `json:"network,omitempty"`
	NetworkDropped int           `json:"network_dropped,omitempty"`
}

// CgroupLimits are the limits of a run's cgroup; 0 = not limited.
type CgroupLimits struct {
	Memory int64   `json:"memory_bytes"`
	CPUs   float64 `json:"cpus"`
	Pids   int64   `json:"pids"`
}

// Enforced records what was actually applied to a run, so that a judge or
// a harness can audit it.
type Enforced struct {
	// Backend is "namespaces" (the jail) or "process" (no isolation but
	// rlimits, no_new_privs, seccomp and the process-group kill).
	Backend string `json:"backend"`
	// Namespaces the sandbox had of its own.
	Namespaces []string `json:"namespaces"`
	// UIDMap is the sandbox's uid_map line: inside, host, count.
	UIDMap string `json:"uid_map"`
	// Rootfs is how the root was switched: "pivot_root".
	Rootfs string `json:"rootfs"`
	// Network is "none" (private namespace, lo only), "allow" (that,
	// with the egress proxy as its one way out), "host", or "landlock"
	// (the process backend: the host's network namespace, TCP bind and
	// connect denied by Landlock; UDP not below ABI 10, listed in
	// NotEnforced).
	Network string `json:"network"`
	// Egress describes the egress proxy of net allow: where it listens
	// inside, its rules and limits. "" without net allow.
	Egress string `json:"egress,omitempty"`
	// Limits is the backend of the memory and task limits: "cgroup2",
	// "cgroup1", "rlimit", or "none" (a spec with neither).
	Limits string `json:"limits"`
	// Cgroup holds the cgroup limits (memory bytes, cpus, pids), when the
	// backend is a cgroup.
	Cgroup *CgroupLimits `json:"cgroup,omitempty"`
	// Rlimits are the resource limits set on the program, by name.
	Rlimits map[string]uint64 `json:"rlimits,omitempty"`
	// Seccomp is "none" or the profile whose filter was loaded, with its
	// number of (syscall, rule) pairs and BPF instructions.
	Seccomp             string `json:"seccomp"`
	SeccompRules        int    `json:"seccomp_rules,omitempty"`
	SeccompInstructions int    `json:"seccomp_instructions,omitempty"`
	// Capabilities left in any set: "none".
	Capabilities string `json:"capabilities"`
	// NoNewPrivs is true when no_new_privs was set.
	NoNewPrivs bool `json:"no_new_privs"`
	// Landlock is the Landlock ABI of the ruleset the program ran under
	// (see Spec.Landlock), 0 when none.
	Landlock int `json:"landlock"`
	// Timeout is the wall-clock limit, "" when none.
	Timeout string `json:"timeout,omitempty"`
	// NotEnforced lists the controls that were not applied (policy.Check
	// decides): what the policy asked for and this host could not apply,
	// accepted only because the policy is best_effort, and the defaults
	// the chosen backend cannot apply (the process backend's network and
	// filesystem isolation).
	NotEnforced []string `json:"not_enforced,omitempty"`
	// Weakened names each way the run's policy is weaker than the default
	// policy on purpose (seccomp off, the host's network, a writable bind,
	// a syscall the default profile denies allowed, ...): not refused,
	// but never silent.
	Weakened []string `json:"weakened,omitempty"`
}
