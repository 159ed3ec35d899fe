// Package cgroups is airlock's interface to Linux control groups, over
// github.com/containerd/cgroups/v3.
//
// # What it does today
//
// HostMode tells how the host mounts cgroups (unified v2, hybrid, legacy
// v1, or none). airlock uses it to explain why a control that needs a
// cgroup (a CPU rate limit) cannot be enforced.
//
// # What it does not do yet
//
// It does not yet create per-run cgroups: until it does, airlock bounds
// memory, tasks and CPU time with rlimits, reports "limits": "rlimit" in
// every result, and refuses (fails closed) a control that only a cgroup
// can enforce, such as --cpus, unless the policy is best_effort.
package cgroups
