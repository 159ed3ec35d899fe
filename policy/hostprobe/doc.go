// Package hostprobe tells what this host can enforce, as a policy.Host
// that policy.Check judges policies against: the kernel (the new mount
// API), user namespaces (and whether a sysctl or AppArmor restricts
// them), a usable cgroup, seccomp and its actions, seccomp user
// notification, pidfd and Landlock, each a check with a typed ID
// (policy.CheckKernel, ...), what was seen and the fix.
//
// # No side effects
//
// Probe only reads: /proc, /sys, the cgroup files, and a few syscalls that
// ask the kernel without changing anything (uname, prctl PR_GET_SECCOMP,
// seccomp SECCOMP_GET_ACTION_AVAIL, pidfd_open of itself, closed at once,
// landlock_create_ruleset's version query). It moves no process, enables
// no cgroup controller, writes no file and keeps no state: each call
// probes again (a fraction of a millisecond), so a long-lived caller sees
// a host that changed. What a cgroup parent would need is answered by
// cgroups.Inspect, which writes nothing; the executor then sets its parent
// up itself (cgroups.Find) and records the outcome in its own copy of the
// Host.
//
// # Why a package of its own
//
// policy holds the Host data type and Check, pure and testable with hosts
// written as data on any OS. The probe needs cgroups and seccomp, which
// import policy: in policy it would be an import cycle. It is public, so a
// daemon can probe before it makes an executor, or serve the report on
// its own health endpoint; `airlock doctor` prints it.
//
// Heuristics can be wrong (AppArmor lets a user namespace be created and
// then denies everything in it): the authoritative answer is a dry run of a
// real sandbox, which `airlock doctor` adds.
package hostprobe
