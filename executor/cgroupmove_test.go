package executor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// newInCgroupEnv makes the test binary newInCgroup (TestMain): it calls
// executor.New with the Config in the variable (JSON) and prints what
// happened to it.
const newInCgroupEnv = "AIRLOCK_TEST_NEW_IN_CGROUP"

// newInCgroupReport is what newInCgroup prints.
type newInCgroupReport struct {
	Before, After string // /proc/self/cgroup
	Limits, Dir   string // Capabilities().Limits, CgroupDir()
	Err           string
}

func newInCgroup(cfgJSON string) int {
	var cfg executor.Config
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Println(err)
		return 2
	}
	r := newInCgroupReport{Before: ownCgroup()}
	ex, err := executor.New(cfg)
	r.After = ownCgroup()
	if err != nil {
		r.Err = err.Error()
	} else {
		r.Limits, r.Dir = ex.Capabilities().Limits, ex.CgroupDir()
		ex.Close()
	}
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func ownCgroup() string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	return strings.TrimSpace(string(b))
}

// On cgroup v2, executor.New moves its process into <own>/airlock-supervisor
// only with Config.CgroupMoveSelf (a daemon linking airlock is not moved
// unasked), and never when a cgroup parent is configured: not out of its
// cgroup, and not into the parent. Each case is a process of its own (this
// binary), started in a cgroup made for it.
func TestCgroupMoveSelf(t *testing.T) {
	if m := cgroups.HostMode(); m != cgroups.Unified {
		// A mode of this host, not a missing feature: the cgroup v2 guest
		// (scripts/vmtest) runs it.
		t.Skipf("cgroup v2 only; this host's cgroups are %s", m)
	}
	testutil.RequireRoot(t) // makes cgroups at the root
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		dir := filepath.Join("/sys/fs/cgroup", fmt.Sprintf("airlock-movetest-%d-%s", os.Getpid(), name))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			os.Remove(filepath.Join(dir, "airlock-supervisor"))
			os.Remove(dir)
		})
		return dir
	}
	// run starts this binary in cgroup dir with cfg and returns its report.
	run := func(dir string, cfg executor.Config) newInCgroupReport {
		t.Helper()
		fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		js, _ := json.Marshal(cfg)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), newInCgroupEnv+"="+string(js))
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		out, err := cmd.Output()
		var r newInCgroupReport
		if err != nil || json.Unmarshal(out, &r) != nil || r.Err != "" {
			t.Fatalf("New in %s with %s: %v %s %+v", dir, js, err, out, r)
		}
		return r
	}
	rel := func(dir string) string { return "0::" + strings.TrimPrefix(dir, "/sys/fs/cgroup") }

	own := mk("own")
	r := run(own, executor.Config{})
	if r.Before != rel(own) || r.After != r.Before || r.Limits != "rlimit" || r.Dir != "" {
		t.Errorf("without CgroupMoveSelf: %+v; want no move (and, in a cgroup holding a process, no cgroup limits)", r)
	}
	if _, err := os.Stat(filepath.Join(own, "airlock-supervisor")); err == nil {
		t.Error("without CgroupMoveSelf, New made a supervisor leaf")
	}

	// Fresh cgroups from here: a cgroup whose children got controllers
	// takes no process.
	own = mk("move")
	r = run(own, executor.Config{CgroupMoveSelf: true})
	if r.Before != rel(own) || r.After != rel(own)+"/airlock-supervisor" || r.Limits != "cgroup2" || r.Dir != own {
		t.Errorf("with CgroupMoveSelf: %+v; want moved into %s/airlock-supervisor, groups beside it", r, own)
	}

	parent := mk("parent")
	own = mk("configured")
	r = run(own, executor.Config{CgroupMoveSelf: true, CgroupParent: strings.TrimPrefix(parent, "/sys/fs/cgroup")})
	if r.After != r.Before || r.Limits != "cgroup2" || r.Dir != parent {
		t.Errorf("with a configured parent: %+v; want no move, groups in %s", r, parent)
	}
	if _, err := os.Stat(filepath.Join(parent, "airlock-supervisor")); err == nil {
		t.Error("New made a supervisor leaf in the configured parent")
	}
	own = mk("busy")
	r = run(own, executor.Config{CgroupMoveSelf: true, CgroupParent: strings.TrimPrefix(own, "/sys/fs/cgroup")})
	if r.After != r.Before || r.Limits != "rlimit" {
		t.Errorf("with its own, busy cgroup configured as the parent: %+v; want no move and no cgroup", r)
	}
}
