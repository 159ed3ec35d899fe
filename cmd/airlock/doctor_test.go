package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// On this host (root or rootless) the default policy can be enforced;
// the cgroup line says what it should for the mode: usable as root, and
// rootless on cgroup v1 missing with a fix.
func TestDoctor(t *testing.T) {
	testutil.RequireUserNS(t)
	var out, errb bytes.Buffer
	if code := doctorCmd([]string{"--json"}, &out, &errb); code != 0 {
		t.Fatalf("doctor --json: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var r struct {
		policy.Host
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out.String())
	}
	if !r.OK || r.UID != os.Getuid() || r.CgroupMode != string(cgroups.HostMode()) {
		t.Fatalf("report %+v", r)
	}
	ids := map[policy.CheckID]policy.Capability{}
	for _, c := range r.Checks {
		ids[c.ID] = c
	}
	for _, id := range []policy.CheckID{policy.CheckKernel, policy.CheckUserNS, policy.CheckCgroup, policy.CheckSeccomp,
		policy.CheckSeccompNotify, policy.CheckPidfd, policy.CheckLandlock, policy.CheckLandlockNet, policy.CheckLandlockScope, checkDryRun} {
		if c, ok := ids[id]; !ok || c.Name == "" {
			t.Errorf("no %q check", id)
		}
	}
	if c := ids[checkDryRun]; !c.OK || !strings.Contains(c.Detail, "seccomp default") {
		t.Errorf("dry run: %+v", c)
	}
	// Issue 20: the egress mode, from a real net allow sandbox.
	if c := ids[checkEgress]; !c.OK || !strings.Contains(c.Detail, "egress mode: the sandbox's own network namespace") {
		t.Errorf("net allow check: %+v", c)
	}
	cg := ids[policy.CheckCgroup]
	if cg.OK != (r.Limits != "") {
		t.Errorf("cgroup check %+v with limits %q", cg, r.Limits)
	}
	switch {
	case os.Getuid() == 0 && !cg.OK:
		t.Errorf("root: cgroup limits missing: %+v", cg)
	case os.Getuid() != 0 && cgroups.HostMode() != cgroups.Unified && (cg.OK || !strings.Contains(cg.Fix, "root")):
		t.Errorf("rootless on cgroup v1: %+v", cg)
	}

	out.Reset()
	if code := doctorCmd(nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "the default policy can be enforced") {
		t.Fatalf("doctor: exit %d\n%s", code, out.String())
	}
	if !cg.OK && !strings.Contains(out.String(), "fix: ") {
		t.Errorf("text output lacks the fix:\n%s", out.String())
	}
	// Issue 21: which backend runs, and what the process backend isolates
	// here (Landlock's part where the kernel has it).
	if !strings.Contains(out.String(), "backends: namespaces (the jail): the default here") ||
		!strings.Contains(out.String(), "process (--backend process") || ids[policy.CheckLandlock].OK != strings.Contains(out.String(), "Landlock ABI") {
		t.Errorf("doctor's backends:\n%s", out.String())
	}
}

// doctor's dry run is a real sandbox: ten doctor runs as CLI processes
// leave no process, file in their TMPDIR or cgroup behind, and three in
// this process no fd either. Each used to leave its run's cgroup (five
// directories on a cgroup v1 host): its executor was never closed, so the
// CLI exited before the group's removal in the background.
func TestDoctorLeavesNothing(t *testing.T) {
	testutil.RequireUserNS(t)
	tmp := testutil.WorldReadableDir(t)
	t.Setenv("TMPDIR", tmp)
	var out, errb bytes.Buffer
	doctorCmd(nil, &out, &errb) // warm up (the runtime's poller, the probe)
	fds := testutil.CountFDs(t)
	for i := range 3 {
		out.Reset()
		if code := doctorCmd([]string{"--json"}, &out, &errb); code != 0 {
			t.Fatalf("run %d: doctor exit %d\n%s%s", i, code, out.String(), errb.String())
		}
	}
	testutil.CheckNothingLeft(t, testutil.Left{Work: tmp, FDs: fds})

	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for i := range 10 {
		cmd := exec.Command(bin, "doctor")
		cmd.Env = append(os.Environ(), "AIRLOCK_TEST_AS_CLI=1", "TMPDIR="+tmp)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, b)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	testutil.CheckNothingLeft(t, testutil.Left{Work: tmp, Supervisors: pids, Binary: bin})
}

// doctor tells the truth about this host (issue 24 point 14): a legend
// for ok, MISS and miss; the languages exec can run here; a foreign
// airlock-init reported as a broken installation, not as a host that
// cannot enforce the policy; and, as uid 0 of a user namespace that does
// not map the sandbox's host uid (unshare -Ur), that cause and its fix,
// not "enable user namespaces".
func TestDoctorTruth(t *testing.T) {
	testutil.RequireUserNS(t)
	var out, errb bytes.Buffer
	if code := doctorCmd(nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "MISS: the default policy needs it") ||
		!strings.Contains(out.String(), "languages exec can run here: ") || !strings.Contains(out.String(), "sh") {
		t.Errorf("doctor: exit %d\n%s", code, out.String())
	}
	out.Reset()
	doctorCmd([]string{"--json"}, &out, &errb)
	var r struct {
		Languages []string `json:"languages"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || !slices.Contains(r.Languages, "sh") {
		t.Errorf("doctor --json languages: %v %v", err, r.Languages)
	}

	t.Run("foreign-init", func(t *testing.T) {
		bin := testutil.BinDir(t)
		dir := testutil.WorldReadableDir(t)
		// airlock-daemon runs doctor for a CLI without cgo.
		for dst, src := range map[string]string{"airlock": "airlock", "airlock-daemon": "airlock-daemon", "airlock-init": "airlock-init-other"} {
			if err := copyFile(filepath.Join(dir, dst), filepath.Join(bin, src)); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(filepath.Join(dir, "airlock"), "doctor")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + t.TempDir()}
		b, _ := cmd.Output()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(b), "installation is broken, not this host") ||
			strings.Contains(string(b), "can NOT be enforced on this host") || !strings.Contains(string(b), "scripts/build") {
			t.Errorf("foreign init: exit %d\n%s", cmd.ProcessState.ExitCode(), b)
		}
	})

	t.Run("unmapped-id", func(t *testing.T) {
		unshare := testutil.RequireBinary(t, "unshare")
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"doctor"}, {"run", "--", "true"}} {
			cmd := exec.Command(unshare, append([]string{"-Ur", self}, args...)...)
			cmd.Env = []string{"AIRLOCK_TEST_AS_CLI=1", "PATH=/usr/bin:/bin", "HOME=/tmp", "XDG_CACHE_HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
			b, _ := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			want := map[string]int{"doctor": 1, "run": exitSetup}[args[0]]
			if code != want || !strings.Contains(string(b), "does not map uid 65534") || strings.Contains(string(b), "enable unprivileged user namespaces") {
				t.Errorf("%v in unshare -Ur: exit %d (want %d)\n%s", args, code, want, b)
			}
		}
	})
}
