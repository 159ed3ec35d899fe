package cgroups

import (
	"os"
	"testing"
)

func TestHostModeMatchesMounts(t *testing.T) {
	mode := HostMode()
	_, errV1 := os.Stat("/sys/fs/cgroup/memory")
	_, errHybrid := os.Stat("/sys/fs/cgroup/unified/cgroup.procs")
	_, errUnified := os.Stat("/sys/fs/cgroup/cgroup.procs")
	var want Mode
	switch {
	case errUnified == nil:
		want = Unified
	case errHybrid == nil:
		want = Hybrid
	case errV1 == nil:
		want = Legacy
	default:
		want = Unavailable
	}
	if mode != want {
		t.Fatalf("HostMode() = %s, the mounts say %s", mode, want)
	}
}
