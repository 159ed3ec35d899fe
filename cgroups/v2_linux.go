//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type v2Group struct {
	dir string
	mu  sync.Mutex
	// peak is memory.peak opened for a reset (ResetPeak): its reads see
	// the peak since the last reset through it. nil before one.
	peak *os.File
}

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
	g.mu.Lock()
	peak := g.peak
	if peak != nil {
		var b [32]byte
		n, rerr := peak.ReadAt(b[:], 0)
		if rerr == nil || errors.Is(rerr, io.EOF) {
			s.MemoryPeak, rerr = strconv.ParseInt(strings.TrimSpace(string(b[:n])), 10, 64)
		}
		err = rerr
	}
	g.mu.Unlock()
	if peak != nil && err != nil {
		return s, fmt.Errorf("cgroups: memory.peak: %w", err)
	}
	if peak == nil {
		if s.MemoryPeak, err = readInt(filepath.Join(g.dir, "memory.peak")); err != nil {
			s.MemoryPeak, _ = readInt(filepath.Join(g.dir, "memory.current"))
		}
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

func (g *v2Group) ResetPeak() error {
	f, err := os.OpenFile(filepath.Join(g.dir, "memory.peak"), os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err == nil {
		if _, err = f.Write([]byte("reset\n")); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("cgroups: resetting the memory peak (Linux 6.12 or later): %w", err)
	}
	g.mu.Lock()
	old := g.peak
	g.peak = f
	g.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

func (g *v2Group) Delete() error {
	g.mu.Lock()
	if g.peak != nil {
		g.peak.Close()
		g.peak = nil
	}
	g.mu.Unlock()
	if !exists(g.dir) {
		return nil
	}
	g.Kill()
	return rmdirWhenEmpty(g.dir)
}
