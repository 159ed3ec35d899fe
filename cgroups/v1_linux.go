//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// v1Group is a run's cgroup in each v1 hierarchy (controller -> dir).
type v1Group struct{ dirs map[string]string }

// newV1 makes the run's directory in every hierarchy and sets its limits:
// memory.limit_in_bytes and, where swap is accounted, the same
// memory.memsw.limit_in_bytes (no swap); CFS quota; pids.max.
func newV1(dirs map[string]string, lim Limits) (Group, error) {
	g := &v1Group{dirs: dirs}
	for _, c := range v1Controllers {
		if err := os.Mkdir(dirs[c], 0o755); err != nil {
			g.Delete()
			return nil, fmt.Errorf("cgroups: %w", err)
		}
	}
	var files [][2]string
	if lim.Memory > 0 {
		mem := strconv.FormatInt(lim.Memory, 10)
		files = append(files, [2]string{g.file("memory", "memory.limit_in_bytes"), mem})
		if sw := g.file("memory", "memory.memsw.limit_in_bytes"); exists(sw) {
			files = append(files, [2]string{sw, mem}) // memsw >= limit: set after it
		}
	}
	if lim.CPUs > 0 {
		files = append(files, [2]string{g.file("cpu", "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)},
			[2]string{g.file("cpu", "cpu.cfs_quota_us"), strconv.FormatInt(cpuQuota(lim.CPUs), 10)})
	}
	if lim.Pids > 0 {
		files = append(files, [2]string{g.file("pids", "pids.max"), strconv.FormatInt(lim.Pids, 10)})
	}
	for _, f := range files {
		if err := writeFile(f[0], f[1]); err != nil {
			g.Delete()
			return nil, fmt.Errorf("cgroups: %w", err)
		}
	}
	return g, nil
}

func (g *v1Group) file(controller, name string) string {
	return filepath.Join(g.dirs[controller], name)
}

func (g *v1Group) Backend() string { return "cgroup1" }

// DirFD is -1: CLONE_INTO_CGROUP is cgroup v2 only.
func (g *v1Group) DirFD() int { return -1 }

func (g *v1Group) SelfFiles() ([]*os.File, error) {
	var files []*os.File
	for _, c := range v1Controllers {
		f, err := os.OpenFile(g.file(c, "tasks"), os.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("cgroups: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}

func (g *v1Group) Add(pid int) error {
	for _, c := range v1Controllers {
		if err := writeFile(g.file(c, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
	}
	return nil
}

func (g *v1Group) Stats() (Stats, error) {
	var s Stats
	var err error
	if s.MemoryPeak, err = readInt(g.file("memory", "memory.max_usage_in_bytes")); err != nil {
		return s, fmt.Errorf("cgroups: %w", err)
	}
	ns, err := readInt(g.file("cpuacct", "cpuacct.usage"))
	if err != nil {
		return s, fmt.Errorf("cgroups: %w", err)
	}
	s.CPU = time.Duration(ns)
	oom, err := readKey(g.file("memory", "memory.oom_control"), "oom_kill") // Linux 4.13
	if err != nil {
		return s, fmt.Errorf("cgroups: %w", err)
	}
	s.OOMKills = uint64(oom)
	return s, nil
}

func (g *v1Group) ResetPeak() error {
	if err := writeFile(g.file("memory", "memory.max_usage_in_bytes"), "0"); err != nil {
		return fmt.Errorf("cgroups: resetting the memory peak: %w", err)
	}
	return nil
}

// Kill freezes the group, SIGKILLs every process in it and thaws it, so
// nothing can fork away between the listing and the kill.
func (g *v1Group) Kill() error {
	if ps, err := pids(g.dirs["freezer"]); err == nil && len(ps) == 0 {
		return nil // empty: the usual case once the sandbox's pid 1 is gone
	}
	state := g.file("freezer", "freezer.state")
	if err := writeFile(state, "FROZEN"); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cgroups: %w", err)
	}
	for i := 0; i < 100; i++ {
		b, _ := os.ReadFile(state)
		if strings.TrimSpace(string(b)) == "FROZEN" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ps, err := pids(g.dirs["freezer"])
	for _, pid := range ps {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	writeFile(state, "THAWED")
	return err
}

func (g *v1Group) Delete() error {
	g.Kill()
	var errs []error
	for _, c := range v1Controllers {
		if dir := g.dirs[c]; exists(dir) {
			errs = append(errs, rmdirWhenEmpty(dir))
		}
	}
	return errors.Join(errs...)
}
