package cgroups

import (
	"os"
	"time"
)

// Limits are the limits of one run's cgroup. A zero field is not limited.
type Limits struct {
	Memory int64   // bytes of memory (and no swap)
	CPUs   float64 // CPU bandwidth in cores
	Pids   int64   // tasks
}

// Stats are what a run's cgroup measured.
type Stats struct {
	MemoryPeak int64         // highest memory use, bytes
	CPU        time.Duration // CPU time of every task, user + system
	OOMKills   uint64        // tasks the OOM killer killed in it
}

// Group is one run's cgroup.
type Group interface {
	// Backend is "cgroup1" or "cgroup2".
	Backend() string
	// DirFD returns an fd of the cgroup directory for CLONE_INTO_CGROUP
	// (the caller closes it), or -1 when the backend has none (v1).
	DirFD() int
	// SelfFiles opens for writing the files through which a thread moves
	// itself, alone, into the group by writing "0": the tasks file of
	// every v1 hierarchy. Moving only the calling thread is the one
	// attach that skips the kernel's global threadgroup lock, whose
	// write side waits for an RCU grace period (about 10 ms) on every
	// attach by pid. nil on v2, where a group holds whole processes (see
	// DirFD). The caller closes the files; they carry the opener's
	// credentials, so they must never reach untrusted code.
	SelfFiles() ([]*os.File, error)
	// Add moves process pid (and its threads) into the group.
	Add(pid int) error
	// Stats reads the group's usage.
	Stats() (Stats, error)
	// ResetPeak makes MemoryPeak count from now (the current usage): for a
	// group that serves one run after another (a recycled sandbox). v1:
	// memory.max_usage_in_bytes; v2: memory.peak, Linux 6.12 or later
	// (the reset holds for reads through the fd that wrote it, which
	// Stats then uses). An error means the peak cannot be reset here.
	ResetPeak() error
	// Kill SIGKILLs every task in the group.
	Kill() error
	// Delete kills what is left, waits for the group to empty, and removes it.
	Delete() error
}

// cpuPeriod is the CFS period used for CPU bandwidth limits.
const cpuPeriod = 100000 // µs

func cpuQuota(cpus float64) int64 { return int64(cpus * cpuPeriod) }
