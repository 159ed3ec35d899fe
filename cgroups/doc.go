// Package cgroups makes, measures, kills and removes the per-run cgroup of
// a sandbox, on cgroup v2 and v1.
//
// # Where
//
// Find discovers a parent under which this process may make cgroups: on
// v2, its own cgroup when writable and delegated with the memory, cpu and
// pids controllers, or a configured one; on v1, its own cgroup in the
// memory, cpu, cpuacct, pids and freezer hierarchies, which takes root.
// When none is usable the error is a policy.UnsupportedError naming the
// fix. Find never moves the calling process unless asked: on v2 the "no
// internal processes" rule makes a process's own cgroup unusable as a
// parent while it holds processes, and only a caller that passes moveSelf
// (the airlock CLI, through executor.Config.CgroupMoveSelf) is moved into
// a leaf, airlock-supervisor. Inspect answers as Find would, writing
// nothing: the host probe uses it.
//
// # Per run
//
// Parent.New makes a group with an unguessable name carrying the
// supervisor's pid and start time, with memory (no swap; on v2
// memory.oom.group so an OOM kill takes the whole sandbox), CPU bandwidth
// and task limits. The jail places its init in it before any program code
// runs (CLONE_INTO_CGROUP on v2). After the run Stats reads peak memory,
// CPU time and OOM kills; Kill uses cgroup.kill (v2) or freeze, SIGKILL,
// thaw (v1); Delete waits for the group to empty and removes it.
// ReapStale removes the groups of supervisors that died mid-run.
//
// # Dependencies
//
// Mode detection and /proc/self/cgroup parsing come from
// github.com/containerd/cgroups/v3. The file operations are written here
// rather than through its cgroup1 and cgroup2 managers: importing those
// links protobuf, cilium/ebpf, dbus and logrus (a 10 MB binary) and costs
// about 2 ms at every process start on the CI machine, and airlock's init
// is a re-exec of the same binary, so it would pay that twice per run.
package cgroups
