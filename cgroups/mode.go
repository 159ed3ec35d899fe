package cgroups

import cg "github.com/containerd/cgroups/v3"

// Mode is how the host mounts cgroups.
type Mode string

const (
	// Unified: cgroup v2 only, at /sys/fs/cgroup.
	Unified Mode = "unified"
	// Hybrid: v1 controllers, plus a v2 tree at /sys/fs/cgroup/unified
	// (on most such hosts without the memory, cpu and pids controllers).
	Hybrid Mode = "hybrid"
	// Legacy: cgroup v1 only.
	Legacy Mode = "legacy"
	// Unavailable: no cgroup filesystem.
	Unavailable Mode = "unavailable"
)

// HostMode returns the host's cgroup mode (cached for the process by the
// underlying library).
func HostMode() Mode {
	switch cg.Mode() {
	case cg.Unified:
		return Unified
	case cg.Hybrid:
		return Hybrid
	case cg.Legacy:
		return Legacy
	}
	return Unavailable
}
