package nsjail

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/rootfs"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// Spec is a fully resolved sandbox: everything the init needs is decided
// here, in the parent. The init only carries it out.
type Spec struct {
	// Args is the program and its arguments. Args[0] is looked up in the
	// PATH of Env inside the sandbox when it has no slash. Mandatory.
	Args []string
	// Env is the program's complete environment. Nothing of the
	// supervisor's environment is passed unless it is listed here.
	Env []string
	// Dir is the working directory inside the sandbox. "" = /workspace.
	Dir string
	// Hostname is the sandbox's host name. "" = "airlock".
	Hostname string
	// HostNetwork shares the host's network namespace. false (the
	// default) gives a private one with only lo, up.
	HostNetwork bool
	// EgressPort, if not 0, has the init listen on 127.0.0.1:EgressPort
	// in the sandbox's own network namespace and hand the listener to the
	// supervisor, which serves Egress on it while the program runs: the
	// sandbox's one way out (net allow). A prepared sandbox is made with
	// the port and gets its Egress with the request.
	EgressPort int
	// Egress is the proxy served on the EgressPort listener (mandatory
	// with it, except to Prepare); Wait closes it and its connection log
	// is the Result's Network. One Proxy serves one run.
	Egress *egress.Proxy
	// Process selects the process backend: no namespaces and no root
	// filesystem. The program runs on the host, in Dir (a host path), in
	// a session of its own, under Rlimits, no_new_privs, Seccomp and
	// Landlock (its only filesystem and network isolation), as the
	// caller's uid (65534 when the caller is root); the timeout kills its
	// process group (and its cgroup, if it has one): a weaker backend for
	// hosts without user namespaces.
	Process bool
	// Plan is the sandbox's filesystem. Mandatory (see rootfs.Default).
	Plan rootfs.Plan
	// Landlock is applied by the init just before the seccomp filter:
	// the process backend's filesystem and network isolation, a second
	// layer in the jail (paths as seen inside its root). Zero = none.
	Landlock Landlock
	// Rlimits are set on the program (they are inherited by its children).
	Rlimits []Rlimit
	// Seccomp is the filter loaded on the program, as the init's last
	// step before exec. nil = no filter.
	Seccomp *seccomp.Filter
	// Cgroup, if set, is the run's cgroup: the init is placed in it before
	// any program code runs (at clone time on cgroup v2), its usage is
	// reported, an OOM kill in it is status memory_limit, and CPUTime is
	// enforced on its total. The caller creates and deletes it.
	Cgroup cgroups.Group
	// CgroupLimits are the limits Cgroup was made with, for the report.
	CgroupLimits *cgroups.Limits
	// HostUID and HostGID are the host ids the sandbox's ids map to
	// when the supervisor runs as real root. 0 = 65534 (nobody); host id 0
	// is never used. A rootless supervisor always maps its own ids.
	HostUID, HostGID int
	// UID and GID are the ids inside, the one each user namespace map
	// holds ("UID HOSTUID 1"): the init's (with every capability in its
	// namespace until it confines itself) and the program's. 0 = root.
	UID, GID int
	// Timeout is the wall-clock limit, counted from the start. 0 = none.
	Timeout time.Duration
	// CPUTime is the CPU-time limit applied through RLIMIT_CPU, used to
	// classify a CPU-time kill as a timeout. 0 = none.
	CPUTime time.Duration
	// TTY, when set, is the program's stdin, stdout and stderr instead: a
	// terminal (the slave of a pty its caller relays, never the caller's
	// own terminal), which the reaper makes the program's controlling
	// terminal. Nothing is captured then.
	TTY *os.File
	// Stdin is the program's standard input. nil = /dev/null.
	Stdin io.Reader
	// Stdout and Stderr receive the program's output as it is written
	// (pass-through). A nil stream is captured into the Result instead,
	// capped at OutputLimit bytes: past the cap the sandbox is killed and
	// the status is output_limit.
	Stdout, Stderr io.Writer
	// Signals, if set, are delivered to the sandbox's pid 1 as they
	// arrive, once the program was exec'd (see Sandbox.Signal): how a CLI
	// forwards the signals it receives. Signals that arrive before the
	// exec are dropped (there is no program yet to receive them); ending
	// the run is the context's job.
	Signals <-chan os.Signal
	// ProgramGate, if set, holds the program back until it is closed:
	// the sandbox is built meanwhile, and the program is sent to its
	// init, and exec'd, only then (Start waits for it, or for the
	// sandbox's end: a timeout or the context; the caller must close it).
	// A CLI whose signal handling is still being set up in the
	// background holds its program so, so that no signal meant for the
	// program finds the CLI without a handler.
	ProgramGate <-chan struct{}
	// LimitStreams caps Stdout and Stderr (when set) at OutputLimit too:
	// past it the rest is dropped, the sandbox killed (output_limit) and
	// the stream marked truncated. false = they get everything.
	LimitStreams bool
	// OutputLimit is the cap of each captured stream. 0 = 1 MiB.
	OutputLimit int64
	// InitPath is the binary re-executed as the init; it must call Init
	// first thing in main. "" = /proc/self/exe. cmd/airlock-init is such
	// a binary, cgo-free; it refuses a parent with another build token
	// (see buildToken).
	InitPath string
	// SpawnPath is cmd/airlock-spawn, which then creates the init's
	// namespaces instead of a fork of the supervisor (whose cost grows
	// with the supervisor's memory); used with an InitPath only (the
	// helper cannot re-execute the supervisor). "" = the supervisor forks.
	// Also, with or without an InitPath, the sandbox's reaper: its pid 1,
	// the program its child (internal/jailinit/reaper_linux.go); "" = the program is pid 1.
	SpawnPath string
	// NoReaper makes the program pid 1 itself even with a SpawnPath (a
	// program that is an init of its own, or an A/B measurement of the
	// reaper's cost): the kernel then drops the default-action signals
	// it sends itself, as without a SpawnPath.
	NoReaper bool
	// ReaperWaits is for Prepare: the prepared sandbox loads Seccomp and
	// execs its reaper before the request comes, and the reaper then
	// starts the request's program itself (rlimits, working directory,
	// PATH lookup and exec, in the init's order): a request skips the
	// filter's load and the reaper's exec. The reaper makes those calls
	// under the filter, so set it only for a filter that allows every one
	// of ReaperSyscalls (the default profile does). Prepare returns once
	// the reaper waits, so a failure of those steps is Prepare's. Start
	// then takes only a spec with the same filter and a program within
	// the reaper's bounds (Matches). Without a reaper, and for Start and
	// Run, it does nothing.
	ReaperWaits bool
	// Recycle is for Prepare, with ReaperWaits and a Cgroup: the prepared
	// sandbox serves one run after another. Between two runs its reaper
	// kills and reaps every process of the last one, empties the
	// writable tmpfs mounts (/tmp, /dev/shm, /dev/mqueue, a tmpfs
	// /workspace) and checks what it cannot empty: no SysV IPC object,
	// pid 1's inherited attributes (rlimits, nice, sched_getattr,
	// affinity, I/O priority, oom_score_adj) and each emptied root's inode
	// flags and extended attributes as they were. The supervisor resets
	// the cgroup's counters (CPU and OOM bases, memory peak). A run the
	// reaper could not reset, or one killed (timeout, CPU, output,
	// seccomp kill rule, OOM), ends the sandbox: Prepared.Reusable is
	// then false. It needs a filter that allows RecycleSyscalls and denies
	// what a reset cannot undo (the executor recycles under the default
	// profile only), no egress proxy, no mount on or in an emptied
	// directory, and a cgroup whose memory peak can be reset
	// (cgroups.Group.ResetPeak); without them the sandbox serves one run,
	// as without Recycle. A host directory bound writable (the
	// workspace) is the caller's to empty. What a reset does not reach
	// (pid 1's children's CPU times in /proc/1/stat, pid and IPC id
	// counters, the page cache, a port in TIME_WAIT) is shared by the
	// runs of one sandbox.
	Recycle bool
	// Live is for PrepareLive (which sets it, with ReaperWaits): the
	// sandbox's pid 1 starts process after process for as long as it
	// lives (see Live). Not with Recycle.
	Live bool
	// TimerSlack is the timer slack, in nanoseconds, the program (and
	// its reaper) starts with. 0 = the slack of the thread that launches
	// the sandbox, which the program would have inherited from this
	// process. The init itself runs with a slack of its own (the spawn
	// helper gives it InitTimerSlack), so that its Go runtime's monitor
	// thread wakes less during the setup; it sets this one on its exec
	// thread before the filter. A caller that raised its own slack (the
	// airlock CLI does, at its entry) passes the one it was started with.
	TimerSlack uint64
	// SetSignals makes the program start with exactly SignalsIgnored
	// ignored (SIG_IGN; bit n-1 for signal n) and every other signal at
	// its default: the dispositions its caller had, whatever this
	// process's runtime made of them, and whenever the init was started.
	// The init sets them just before its exec; a reaper keeps SIGCHLD at
	// the default for itself and ignores it again in the program's
	// process. The airlock CLI passes the set its entry read, before Go's
	// runtime installed its handlers. Without SetSignals the program gets
	// what the init inherits: from a Go supervisor, SIGHUP and SIGINT
	// ignored where they were at its start and it has registered no
	// handler for them (when the init was started), SIGTSTP, SIGTTIN and
	// SIGTTOU as the supervisor got them, every other signal at its
	// default. With SetSignals, SignalsBlocked is the program's signal
	// mask (the init sets it on its exec thread, the reaper passes it on);
	// without, the program gets the mask of the init's main thread: what
	// a child of the supervisor's main thread would get from Go.
	SetSignals     bool
	SignalsIgnored uint64
	SignalsBlocked uint64
	// Logger receives lifecycle events (never payload data). nil = none.
	Logger *slog.Logger
}

func (s *Spec) validate() error {
	switch {
	case len(s.Args) == 0 || s.Args[0] == "":
		return policy.Invalid("args", "no program given")
	case s.Timeout < 0:
		return policy.Invalid("timeout", "must not be negative")
	case s.OutputLimit < 0:
		return policy.Invalid("output limit", "must not be negative")
	case s.UID < 0 || s.GID < 0 || s.UID > 65533 || s.GID > 65533:
		return policy.Invalid("spec", "inside ids %d:%d are not from 0 to 65533", s.UID, s.GID)
	case s.HostUID < 0 || s.HostGID < 0:
		return policy.Invalid("host uid/gid", "must not be negative")
	case s.Seccomp != nil && (len(s.Seccomp.Program) == 0 || len(s.Seccomp.Program) > seccomp.MaxInstructions):
		return policy.Invalid("seccomp", "filter of %d instructions (want 1..%d)", len(s.Seccomp.Program), seccomp.MaxInstructions)
	case len(s.Plan.Ops) == 0 && !s.Process:
		return policy.Invalid("plan", "empty filesystem plan")
	case s.Landlock.ABI < 0 || s.Landlock.ABI == 0 && len(s.Landlock.Paths) > 0 || s.Landlock.Net && s.Landlock.ABI < 4 || s.Landlock.Scope && s.Landlock.ABI < 6:
		return policy.Invalid("landlock", "ruleset %+v beyond its ABI", s.Landlock)
	case s.EgressPort < 0 || s.EgressPort > 65535:
		return policy.Invalid("egress port", "%d is not a port", s.EgressPort)
	case (s.EgressPort != 0) != (s.Egress != nil):
		return policy.Invalid("egress", "an egress port and its proxy go together")
	case s.EgressPort != 0 && (s.HostNetwork || s.Process):
		return policy.Invalid("egress", "the egress proxy needs the sandbox's own network namespace")
	case s.Process && (len(s.Plan.Ops) > 0 || s.HostNetwork):
		return policy.Invalid("plan", "the process backend has no filesystem plan and no network namespace")
	}
	if err := s.Plan.Validate(); err != nil {
		return policy.Invalid("plan", "%v", err)
	}
	return nil
}
