//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type v2Group struct{ dir string }

// newV2 makes a cgroup v2 directory with limits: memory.max with no swap
// and memory.oom.group (an OOM kill takes the whole sandbox), cpu.max,
// pids.max. On any failure the directory is removed.
func newV2(dir string, lim Limits) (Group, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	g := &v2Group{dir: dir}
	var files [][2]string
	if lim.Memory > 0 {
		files = append(files, [2]string{"memory.max", strconv.FormatInt(lim.Memory, 10)}, [2]string{"memory.oom.group", "1"})
		if exists(filepath.Join(dir, "memory.swap.max")) {
			files = append(files, [2]string{"memory.swap.max", "0"})
		}
	}
	if lim.CPUs > 0 {
		files = append(files, [2]string{"cpu.max", fmt.Sprintf("%d %d", cpuQuota(lim.CPUs), cpuPeriod)})
	}
	if lim.Pids > 0 {
		files = append(files, [2]string{"pids.max", strconv.FormatInt(lim.Pids, 10)})
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f[0]), f[1]); err != nil {
			unix.Rmdir(dir)
			return nil, fmt.Errorf("cgroups: %w", err)
		}
	}
	return g, nil
}

func (g *v2Group) Backend() string { return "cgroup2" }

func (g *v2Group) DirFD() int {
	fd, err := unix.Open(g.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// SelfFiles is nil: a v2 group holds whole processes, and moving one
// takes the global lock whatever the caller (CLONE_INTO_CGROUP avoids it).
func (g *v2Group) SelfFiles() ([]*os.File, error) { return nil, nil }

func (g *v2Group) Add(pid int) error {
	return writeFile(filepath.Join(g.dir, "cgroup.procs"), strconv.Itoa(pid))
}

func (g *v2Group) Stats() (Stats, error) {
	var s Stats
	var err error
	// memory.peak needs Linux 5.19.
	if s.MemoryPeak, err = readInt(filepath.Join(g.dir, "memory.peak")); err != nil {
		s.MemoryPeak, _ = readInt(filepath.Join(g.dir, "memory.current"))
	}
	usec, err := readKey(filepath.Join(g.dir, "cpu.stat"), "usage_usec")
	if err != nil {
		return s, fmt.Errorf("cgroups: %w", err)
	}
	s.CPU = time.Duration(usec) * time.Microsecond
	oom, err := readKey(filepath.Join(g.dir, "memory.events"), "oom_kill")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("cgroups: %w", err)
	}
	s.OOMKills = uint64(oom)
	return s, nil
}

// Kill writes cgroup.kill (Linux 5.14); before that, it freezes the group,
// SIGKILLs every process and thaws it.
func (g *v2Group) Kill() error {
	if ps, err := pids(g.dir); err == nil && len(ps) == 0 {
		return nil // empty: the usual case once the sandbox's pid 1 is gone
	}
	err := writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
	if err == nil || errors.Is(err, os.ErrNotExist) && !exists(g.dir) {
		return nil
	}
	freeze := filepath.Join(g.dir, "cgroup.freeze")
	writeFile(freeze, "1")
	defer writeFile(freeze, "0")
	ps, err := pids(g.dir)
	for _, pid := range ps {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return err
}

func (g *v2Group) Delete() error {
	if !exists(g.dir) {
		return nil
	}
	g.Kill()
	return rmdirWhenEmpty(g.dir)
}
