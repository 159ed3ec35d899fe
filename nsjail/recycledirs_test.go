package nsjail

import (
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/rootfs"
)

// What a recycling reaper empties: the writable tmpfs mounts and the
// queues; none (no recycling) when a mount sits on or in one of them, or
// past the reaper's bound.
func TestRecycleDirs(t *testing.T) {
	plan := func(extra ...rootfs.Op) rootfs.Plan {
		p, err := rootfs.Default(rootfs.Options{Extra: extra})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, want := recycleDirs(plan()), []string{"/dev/shm", "/dev/mqueue", "/tmp", "/workspace"}; !slices.Equal(got, want) {
		t.Errorf("default plan: %v, want %v", got, want)
	}
	ws, err := rootfs.Default(rootfs.Options{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := recycleDirs(ws), []string{"/dev/shm", "/dev/mqueue", "/tmp"}; !slices.Equal(got, want) {
		t.Errorf("a host workspace (the caller's to empty): %v, want %v", got, want)
	}
	dir := t.TempDir()
	for name, extra := range map[string][]rootfs.Op{
		"a bind over /tmp":      {{Kind: rootfs.KindBind, Source: dir, Target: "/tmp"}},
		"a read-only bind in":   {{Kind: rootfs.KindBind, Source: dir, Target: "/tmp/data", ReadOnly: true}},
		"a file in /workspace":  {{Kind: rootfs.KindFile, Target: "/workspace/f", Data: "x"}},
		"a tmpfs over /dev/shm": {{Kind: rootfs.KindTmpfs, Target: "/dev/shm", Options: "size=1m", NoExec: true}},
	} {
		if got := recycleDirs(plan(extra...)); got != nil {
			t.Errorf("%s: %v, want none", name, got)
		}
	}
	var many []rootfs.Op
	for i := range recycleMaxDirs {
		many = append(many, rootfs.Op{Kind: rootfs.KindTmpfs, Target: "/scratch" + strings.Repeat("x", i+1), Options: "size=1m"})
	}
	if got := recycleDirs(plan(many...)); got != nil {
		t.Errorf("%d writable tmpfs mounts, past the reaper's %d: %v", len(many)+4, recycleMaxDirs, got)
	}
	if got := recycleDirs(plan(many[:recycleMaxDirs-4]...)); len(got) != recycleMaxDirs {
		t.Errorf("exactly %d: %v", recycleMaxDirs, got)
	}
}
