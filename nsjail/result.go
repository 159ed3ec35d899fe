package nsjail

import (
	"encoding/base64"
	"errors"
	"fmt"
	"syscall"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// Status is the outcome of a run.
type Status string

const (
	StatusOK               Status = "ok"                // exited 0
	StatusExited           Status = "exited"            // exited non-zero
	StatusSignaled         Status = "signaled"          // killed by a signal it raised or received inside
	StatusTimeout          Status = "timeout"           // the wall-clock limit
	StatusCPULimit         Status = "cpu_limit"         // the CPU-time limit
	StatusMemoryLimit      Status = "memory_limit"      // the OOM killer fired in the sandbox's cgroup
	StatusSeccompViolation Status = "seccomp_violation" // killed by the seccomp filter
	StatusOutputLimit      Status = "output_limit"      // a captured stream passed its cap
	StatusCancelled        Status = "cancelled"         // the caller cancelled the run (its context, or a signal to the CLI)
	StatusSetupError       Status = "setup_error"       // the sandbox could not be built; the program never ran
	StatusError            Status = "error"             // refused before anything ran (see ErrorResult)
)

// Killed reports whether the status is one of the supervisor's kills (a
// limit, the seccomp filter's kill rule, or a cancellation): its
// ExitCode is then 128 plus the signal that ended the program.
func (s Status) Killed() bool {
	switch s {
	case StatusTimeout, StatusCPULimit, StatusMemoryLimit, StatusSeccompViolation, StatusOutputLimit, StatusCancelled:
		return true
	}
	return false
}

// EncodingBase64 is the value of StdoutEncoding and StderrEncoding when
// the captured bytes were not valid UTF-8: the stream is then carried as
// standard base64 (with padding), so that no byte is lost or replaced.
const EncodingBase64 = "base64"

// Exit codes of the results that are no program's own (see ExitCodeOf).
const (
	ExitInvalid     = 125 // the request is invalid or the host cannot enforce it (as docker and podman)
	ExitUnavailable = 75  // EX_TEMPFAIL: a transient failure; a retry can help
	ExitNotFound    = 127 // the program does not exist in the sandbox
	ExitCannotExec  = 126 // the program exists but cannot be executed
)

// Result is the one structured outcome of a run. Its JSON form is
// airlock's result contract (docs/cli.md, "The result").
type Result struct {
	Status Status `json:"status"`
	// ExitCode is what a shell would report, and what the CLI exits with:
	// the program's own code when it exited; 128+N when signal N ended
	// it, airlock's kills included (a timeout is 137, SIGKILL); for a
	// setup_error or an error, 127 (program not found), 126 (not
	// executable), 75 (transient: retry) or 125 (see ExitCodeOf).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal"`
	// Stdout and Stderr are the captured streams. When StdoutEncoding
	// (StderrEncoding) is "base64" the bytes were not valid UTF-8 and the
	// string is their base64 (Bytes decodes either form).
	Stdout          string   `json:"stdout"`
	Stderr          string   `json:"stderr"`
	StdoutEncoding  string   `json:"stdout_encoding,omitempty"`
	StderrEncoding  string   `json:"stderr_encoding,omitempty"`
	StdoutTruncated bool     `json:"stdout_truncated"`
	StderrTruncated bool     `json:"stderr_truncated"`
	WallTimeMS      int64    `json:"wall_time_ms"`
	CPUTimeMS       int64    `json:"cpu_time_ms"`
	MemoryPeakBytes int64    `json:"memory_peak_bytes"`
	SeccompSyscall  string   `json:"seccomp_syscall"`
	Enforced        Enforced `json:"enforced"`
	// Error is set for setup_error and error (and for a timeout during
	// setup): the failure classified (class, retryable, stage, field,
	// message, fix). On a result whose program ran it is a note about
	// the result itself (its cgroup statistics could not be read).
	Error *policy.ErrorInfo `json:"error,omitempty"`
	// Network lists, with net allow, every connection the program asked
	// the egress proxy for, in order: host, port, address, verdict,
	// bytes up and down, duration. NetworkDropped counts those past the
	// log's 4096 entries.
	Network        []egress.Conn `json:"network,omitempty"`
	NetworkDropped int           `json:"network_dropped,omitempty"`
}

// ErrorResult is the Result of a request that has no outcome of its own:
// status error (refused before anything ran), or setup_error when err is
// a *policy.SetupError (building the sandbox failed), with err classified
// and the exit code its class gives (ExitCodeOf). nil for a nil err.
func ErrorResult(err error) *Result {
	if err == nil {
		return nil
	}
	st := StatusError
	var se *policy.SetupError
	if errors.As(err, &se) {
		st = StatusSetupError // building the sandbox failed, as Run reports it
	}
	return &Result{Status: st, ExitCode: ExitCodeOf(err), Error: policy.Describe(err)}
}

// ExitCodeOf is the exit code of a failure: 127 when the program does not
// exist in the sandbox and 126 when it cannot be executed (as podman and
// a shell), 75 (EX_TEMPFAIL) for a transient failure a retry can help
// (ErrUnavailable), and 125 for everything else: an invalid request, a
// control the host cannot enforce, an internal fault.
func ExitCodeOf(err error) int {
	var pe *ProgramError
	switch {
	case errors.As(err, &pe):
		return pe.ExitCode()
	case errors.Is(err, policy.ErrUnavailable):
		return ExitUnavailable
	}
	return ExitInvalid
}

// ProgramError is the init's exec of the program failing: the program
// does not exist in the sandbox (ENOENT, exit 127) or cannot be executed
// there (EACCES and the like, exit 126). It is an invalid request (fix
// the program or what the sandbox sees, do not retry), field "args", and
// matches its errno with errors.Is.
type ProgramError struct {
	Program string
	Errno   syscall.Errno
}

func (e *ProgramError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Program, e.Errno)
	switch e.Errno {
	case syscall.ENOENT:
		msg += " (inside the sandbox: host paths are not visible unless bound with --ro-bind, --bind or --workspace)"
	case syscall.EACCES:
		msg += " (a directory, or a file without execute permission or on a noexec mount)"
	}
	return msg
}

// Unwrap gives errors.Is and errors.As the errno and the invalid field.
func (e *ProgramError) Unwrap() []error {
	return []error{e.Errno, &policy.InvalidError{Field: "args", Reason: e.Error()}}
}

// fieldError is a failure inside the sandbox that a request field
// caused (a --chdir that does not exist there): invalid, with its errno.
type fieldError struct {
	field, msg string
	errno      syscall.Errno
}

func (e *fieldError) Error() string { return e.msg }

func (e *fieldError) Unwrap() []error {
	errs := []error{&policy.InvalidError{Field: e.field, Reason: e.msg}}
	if e.errno != 0 {
		errs = append(errs, e.errno)
	}
	return errs
}

// ExitCode is 127 for a program not found, 126 otherwise.
func (e *ProgramError) ExitCode() int {
	if e.Errno == syscall.ENOENT || e.Errno == syscall.ENOTDIR {
		return ExitNotFound
	}
	return ExitCannotExec
}

// Bytes returns the captured stream (Stdout or Stderr with its encoding)
// as the bytes the program wrote.
func Bytes(text, encoding string) []byte {
	if encoding == EncodingBase64 {
		if b, err := base64.StdEncoding.DecodeString(text); err == nil {
			return b
		}
	}
	return []byte(text)
}

// encodeOutput is a captured stream in its result form: the bytes as a
// string when they are valid UTF-8, else their base64 and "base64". A
// stream cut at its cap may end inside a character; those last bytes of
// a truncated stream are dropped rather than make it all base64.
func encodeOutput(b string, truncated bool) (string, string) {
	if utf8.ValidString(b) {
		return b, ""
	}
	if truncated {
		for cut := 1; cut <= utf8.UTFMax-1 && cut <= len(b); cut++ {
			if s := b[:len(b)-cut]; utf8.ValidString(s) && !utf8.FullRuneInString(b[len(b)-cut:]) {
				return s, ""
			}
		}
	}
	return base64.StdEncoding.EncodeToString([]byte(b)), EncodingBase64
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
	// UID and GID are the program's ids, as it sees them (inside).
	UID int `json:"uid"`
	GID int `json:"gid"`
	// UIDMap and GIDMap are the sandbox's uid_map and gid_map lines:
	// inside, host, count.
	UIDMap string `json:"uid_map"`
	GIDMap string `json:"gid_map"`
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
	// Capabilities left in any set: "none". The process backend run
	// rootless cannot drop the bounding set (that needs CAP_SETPCAP): it
	// says so (the other sets are empty, and no_new_privs keeps any exec
	// from raising one).
	Capabilities string `json:"capabilities"`
	// NoNewPrivs is true when no_new_privs was set.
	NoNewPrivs bool `json:"no_new_privs"`
	// Landlock is the Landlock ABI of the ruleset the program ran under
	// (see Spec.Landlock), 0 when none.
	Landlock int `json:"landlock"`
	// Pid1 is what is pid 1 of the sandbox: "reaper" (the program is
	// its child, and signals and its wait status are as bare), or
	// "program" (no reaper: the program is pid 1, and the kernel drops
	// the default-action signals it sends itself). The process backend
	// has no pid namespace: "subreaper" (the reaper is its child
	// subreaper, kills every process of the run when the program ends or
	// the supervisor dies, and is outside the program's Landlock domain),
	// or "" without a reaper (only the program's process group is killed).
	Pid1 string `json:"pid1,omitempty"`
	// SandboxRun is the run's place in a recycled sandbox (Spec.Recycle:
	// a pool's PoolConfig.Reuse, serve's --reuse): 1 for the sandbox's
	// first run, N for its Nth, each after a reset. 0 (left out): the
	// sandbox was the run's alone.
	SandboxRun int `json:"sandbox_run,omitempty"`
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
