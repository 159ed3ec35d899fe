//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

func TestFindMatchesHost(t *testing.T) {
	p, err := Find("")
	switch {
	case os.Getuid() == 0 && err != nil:
		t.Fatalf("root could not find a cgroup parent: %v", err)
	case os.Getuid() == 0 && HostMode() == Unified && p.Backend() != "cgroup2",
		os.Getuid() == 0 && HostMode() != Unified && p.Backend() != "cgroup1":
		t.Fatalf("mode %s, backend %s", HostMode(), p.Backend())
	case os.Getuid() != 0 && HostMode() != Unified:
		var u *policy.UnsupportedError
		if !errors.As(err, &u) || !errors.Is(err, policy.ErrUnsupported) || !strings.Contains(u.Fix, "root") {
			t.Fatalf("rootless on cgroup v1: %v", err)
		}
	}
}

func TestStaleNames(t *testing.T) {
	own, err := groupName()
	if err != nil {
		t.Fatal(err)
	}
	if stale(own) {
		t.Errorf("own group %s called stale", own)
	}
	start, _ := startTime(os.Getpid())
	for name, want := range map[string]bool{
		fmt.Sprintf("airlock-%d-%d-00", os.Getpid(), start+1): true, // pid reused by another process
		"airlock-999999999-5-00":                              true, // no such process
		"airlock-supervisor":                                  false,
		"airlock-notours-at-all":                              false,
	} {
		if stale(name) != want {
			t.Errorf("stale(%q) = %v", name, !want)
		}
	}
}

// A real group: limits written, a process added and accounted, killed,
// and removed.
func TestGroupLifecycle(t *testing.T) {
	p, err := Find("")
	if err != nil && (os.Getuid() == 0 || os.Getenv("AIRLOCK_TEST_DELEGATED") == "1") {
		t.Fatalf("no usable cgroup parent as root or in a delegated cgroup: %v", err)
	}
	if err != nil {
		t.Skipf("no usable cgroup parent here: %v", err)
	}
	g, err := p.New(Limits{Memory: 32 << 20, Pids: 7, CPUs: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	var memFile, pidsFile string
	switch v := g.(type) {
	case *v1Group:
		memFile, pidsFile = v.file("memory", "memory.limit_in_bytes"), v.file("pids", "pids.max")
	case *v2Group:
		memFile, pidsFile = filepath.Join(v.dir, "memory.max"), filepath.Join(v.dir, "pids.max")
	}
	if m, _ := readInt(memFile); m != 32<<20 {
		t.Errorf("memory limit %d", m)
	}
	if n, _ := readInt(pidsFile); n != 7 {
		t.Errorf("pids.max %d", n)
	}
	// The child works only once it is in the group: v1 does not move
	// memory charged before a process joins.
	cmd := exec.Command("sh", "-c", `read _; exec sh -c "i=0; while [ \$i -lt 100000 ]; do i=\$((i+1)); done; exec sleep 30"`)
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("\n"))
	var st Stats
	for i := 0; i < 200 && (st.CPU == 0 || st.MemoryPeak == 0); i++ {
		time.Sleep(10 * time.Millisecond)
		if st, err = g.Stats(); err != nil {
			t.Fatal(err)
		}
	}
	if st.MemoryPeak <= 0 || st.OOMKills != 0 {
		t.Errorf("stats %+v", st)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("process not killed: %v", err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if exists(memFile) {
		t.Error("group still exists after Delete")
	}
}
