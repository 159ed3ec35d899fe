// Package executor is airlock's high-level API, the layer a daemon, an
// agent framework or a judge links against.
//
// # Use
//
//	func main() {
//		nsjail.Init() // the re-exec hook, first thing in main
//		ex, err := executor.New(executor.Config{})
//		...
//		res, err := ex.Execute(ctx, executor.Request{Language: "python", Code: code})
//		...
//		ex.Close()
//	}
//
// New probes the host once (refusing one without user namespaces or the
// new mount API), finds where per-run cgroups can be made, and reaps
// groups left by a supervisor that died. Execute is safe for concurrent
// use. A Request is either Args, or a Language (see Capabilities and
// SupportsLanguage) with its Code, which is written into /workspace as a
// file; Argv, Stdin, a JSON Input (/workspace/input.json, $AIRLOCK_INPUT)
// and Files go with it, and CollectFiles brings the program's files back
// within FileLimits, never following a link or opening a FIFO or device
// the program planted. A Session keeps its /workspace across executions.
//
// # Outcomes and errors
//
// Program outcomes (non-zero exit, signal, timeout, memory_limit,
// seccomp_violation, output overflow) are Results with a nil error. A
// non-nil error means there is no trusted outcome; errors.Is with
// ErrInvalid (fix the request), ErrUnsupported (this host cannot enforce
// it: give up here) or ErrUnavailable (transient: retry) says what to do.
//
// # Fail closed
//
// A policy that asks for a control this host or user cannot enforce is
// refused before anything runs, naming the control and the fix, unless
// the policy is best_effort; Result.Enforced records what was applied and,
// in not_enforced, what was not. The decision is policy.Check's, made once
// per request against the Executor's Host (the probe of
// policy/hostprobe, with the outcome of New's own cgroup setup): it picks
// the backend, how limits are applied and whether the filter is loaded.
//
// # Side effects on the host process
//
// New probes without changing anything, enables the cgroup controllers of
// the cgroup parent's children (cgroup v2) and removes the cgroups of
// supervisors that died. It moves this process into another cgroup only
// with Config.CgroupMoveSelf, never when Config.CgroupParent is set.
// Resolve starts nothing; it compiles and caches seccomp filters (see its
// doc).
//
// # Backends
//
// The namespace jail is the backend. The process backend (Policy.Backend
// "process") runs the program on the host, in its workspace, in a session
// of its own, as an unprivileged uid, with only the policy's environment,
// rlimits (or a cgroup where usable), no_new_privs and the seccomp
// filter; the timeout kills its process group. It isolates no filesystem
// and no network, and Capabilities and every Result say so. It runs only
// when a policy chooses it, or as the fallback of a best_effort policy on
// a host where the jail cannot run.
package executor
