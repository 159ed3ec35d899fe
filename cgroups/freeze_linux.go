package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Freeze freezes (on) or thaws every task of g: cgroup v2's
// cgroup.freeze, v1's freezer.state. It returns once the kernel reports
// the group frozen (a freeze waits for each task to reach the
// refrigerator; one in an uninterruptible sleep delays it) or thawed, or
// after 5 s with an error (the group is then thawed again).
func Freeze(g Group, on bool) error {
	var file, value, doneFile, done string
	switch g := g.(type) {
	case *v2Group:
		file, value, doneFile, done = filepath.Join(g.dir, "cgroup.freeze"), "0", filepath.Join(g.dir, "cgroup.events"), "frozen 0"
		if on {
			value, done = "1", "frozen 1"
		}
	case *v1Group:
		file, value, done = g.file("freezer", "freezer.state"), "THAWED", "THAWED"
		if on {
			value, done = "FROZEN", "FROZEN"
		}
		doneFile = file
	default:
		return fmt.Errorf("cgroups: no freezer for a %T", g)
	}
	if err := writeFile(file, value); err != nil {
		return fmt.Errorf("cgroups: freeze: %w", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, err := os.ReadFile(doneFile)
		if err != nil {
			return fmt.Errorf("cgroups: freeze: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == done {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if on {
				Freeze(g, false)
			}
			return fmt.Errorf("cgroups: the group did not reach %q in 5 s", done)
		}
		time.Sleep(time.Millisecond)
	}
}

// MemoryCurrent is g's memory use now, in bytes.
func MemoryCurrent(g Group) (int64, error) {
	switch g := g.(type) {
	case *v2Group:
		return readInt(filepath.Join(g.dir, "memory.current"))
	case *v1Group:
		return readInt(g.file("memory", "memory.usage_in_bytes"))
	}
	return 0, fmt.Errorf("cgroups: no memory use for a %T", g)
}

// OOMKills is how many of g's tasks the OOM killer has killed: the one
// counter of Stats, read alone (a live sandbox reads it at each
// process's start and SIGKILL).
func OOMKills(g Group) (uint64, error) {
	var n int64
	var err error
	switch g := g.(type) {
	case *v2Group:
		if n, err = readKey(filepath.Join(g.dir, "memory.events"), "oom_kill"); errors.Is(err, os.ErrNotExist) {
			return 0, nil // no memory controller: no OOM kill (as Stats)
		}
	case *v1Group:
		n, err = readKey(g.file("memory", "memory.oom_control"), "oom_kill")
	default:
		return 0, fmt.Errorf("cgroups: no OOM counter for a %T", g)
	}
	if err != nil {
		return 0, fmt.Errorf("cgroups: %w", err)
	}
	return uint64(n), nil
}

// KillOneOnOOM makes an OOM kill in g take only the process the kernel
// picks, not every task (v2's memory.oom.group, which a run's group sets:
// a run is one program; a live sandbox's processes are many, and one that
// runs out must not end the others). v1 kills one task anyway: nothing to
// do there.
func KillOneOnOOM(g Group) error {
	v2, ok := g.(*v2Group)
	if !ok {
		return nil
	}
	if err := writeFile(filepath.Join(v2.dir, "memory.oom.group"), "0"); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cgroups: memory.oom.group: %w", err)
	}
	return nil
}
