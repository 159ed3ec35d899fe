package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/posture"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
)

// The posture prober is this binary run inside the sandbox as
// `posture --inside` (and its sweep child as `posture --sweep`). In the
// test binary, TestMain never sees those arguments as commands, so they
// are dispatched here, before the testing package starts.
func init() {
	if len(os.Args) > 2 && os.Args[1] == "posture" && strings.HasPrefix(os.Args[2], "--") && !nsjail.IsInit() {
		switch os.Args[2] {
		case "--inside", "--sweep":
			os.Exit(cli(os.Args[1:]))
		}
	}
}

// postureJSON runs `airlock posture --json ARGS` in-process.
func postureJSON(t *testing.T, args ...string) postureReport {
	t.Helper()
	testutil.RequireUserNS(t)
	var out, errb bytes.Buffer
	if code := postureCmd(append([]string{"--json"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("posture %v: exit %d: %s", args, code, errb.String())
	}
	var r postureReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Report == nil {
		t.Fatalf("not a posture report: %v\n%s", err, out.String())
	}
	return r
}

func sysResult(r postureReport, name string) posture.SyscallResult {
	for _, s := range r.Syscalls.Results {
		if s.Name == name {
			return s
		}
	}
	return posture.SyscallResult{}
}

func mountAt(r postureReport, target string) (posture.Mount, bool) {
	for _, m := range r.Mounts {
		if m.Target == target {
			return m, true
		}
	}
	return posture.Mount{}, false
}

func rlimit(r postureReport, name string) posture.Rlimit {
	for _, l := range r.Rlimits {
		if l.Name == name {
			return l
		}
	}
	return posture.Rlimit{Soft: -2, Hard: -2}
}

// Under the default policy the prober, judged from the host, sees new
// namespaces, no capabilities, no_new_privs, a seccomp filter that blocks
// the escape-relevant syscalls, a read-only root, the one-id map and the
// policy's rlimits.
func TestPostureDefault(t *testing.T) {
	r := postureJSON(t)
	if len(r.Errors) > 0 {
		t.Errorf("the prober could not read: %v", r.Errors)
	}
	for _, n := range r.Namespaces {
		isNew := n.New != nil && *n.New
		switch n.Name {
		case "user", "pid", "net", "mnt", "ipc", "uts", "cgroup":
			if !isNew {
				t.Errorf("namespace %s is not new: %+v", n.Name, n)
			}
		case "time":
			// airlock makes no time namespace: proves the comparison
			// can say "the host's".
			if n.New == nil || *n.New {
				t.Errorf("time namespace reported new: %+v", n)
			}
		}
	}
	if len(r.Namespaces) < 7 {
		t.Errorf("namespaces: %+v", r.Namespaces)
	}
	c := r.Capabilities
	for name, s := range map[string]posture.CapSet{"inh": c.Inheritable, "prm": c.Permitted, "eff": c.Effective, "bnd": c.Bounding, "amb": c.Ambient} {
		if s.Hex != "0000000000000000" || len(s.Names) != 0 {
			t.Errorf("capability set %s: %+v", name, s)
		}
	}
	if r.NoNewPrivs != 1 || r.Seccomp != 2 || r.SeccompFilters < 1 {
		t.Errorf("no_new_privs %d, seccomp mode %d, filters %d", r.NoNewPrivs, r.Seccomp, r.SeccompFilters)
	}
	for _, name := range []string{"mount", "unshare", "setns", "ptrace", "bpf", "io_uring_setup", "keyctl"} {
		if s := sysResult(r, name); s.Class != "eperm" {
			t.Errorf("%s: %+v, want blocked with EPERM", name, s)
		}
	}
	for _, name := range []string{"clone3", "syscall_1000"} {
		if s := sysResult(r, name); s.Class != "enosys" {
			t.Errorf("%s: %+v, want ENOSYS", name, s)
		}
	}
	// The sweep reached the kernel too: these are allowed, and fail on
	// their bad arguments.
	for name, errno := range map[string]string{"read": "EBADF", "openat": "EFAULT"} {
		if s := sysResult(r, name); s.Class != "reachable" || s.Errno != errno {
			t.Errorf("%s: %+v, want reachable with %s", name, s, errno)
		}
	}
	if sw := r.Syscalls; sw.Counts.Failed != 0 || sw.Counts.Swept < 300 {
		t.Errorf("sweep counts %+v, failed %+v", sw.Counts, sw.Failed)
	}
	if m, ok := mountAt(r, "/"); !ok || !m.ReadOnly {
		t.Errorf("root mount %+v (found %v), want read-only", m, ok)
	}
	if m, ok := mountAt(r, "/tmp"); !ok || !m.NoSuid || !m.NoDev || m.ReadOnly {
		t.Errorf("/tmp mount %+v (found %v), want writable nosuid,nodev", m, ok)
	}
	// A03: the prober (the airlock binary) is bound read-only.
	if m, ok := mountAt(r, proberPath); !ok || !m.ReadOnly || !m.NoSuid {
		t.Errorf("prober mount %+v (found %v), want read-only nosuid", m, ok)
	}
	hostUID := 65534
	if testutil.Rootless() {
		hostUID = os.Getuid()
	}
	if want := []string{"1000 " + strconv.Itoa(hostUID) + " 1"}; !slices.Equal(r.UIDMap, want) || r.Setgroups != "deny" {
		t.Errorf("uid_map %q, setgroups %q, want %q and deny", r.UIDMap, r.Setgroups, want)
	}
	if l := rlimit(r, "nofile"); l.Soft != 1024 || l.Hard != 1024 {
		t.Errorf("nofile %+v, want 1024/1024", l)
	}
	if l := rlimit(r, "core"); l.Soft != 0 || l.Hard != 0 {
		t.Errorf("core %+v, want 0/0", l)
	}
	// A pid namespace of its own: pid 1 is the reaper, the prober one of
	// the first processes after it.
	if !slices.Equal(r.Interfaces, []string{"lo"}) || r.Hostname != "airlock" || r.PID < 2 || r.PID > 16 {
		t.Errorf("interfaces %v, hostname %q, pid %d", r.Interfaces, r.Hostname, r.PID)
	}
	if !slices.Equal(r.EnvNames, []string{"HOME", "LANG", "PATH"}) {
		t.Errorf("environment names %v", r.EnvNames)
	}
	if !slices.Equal(r.Cgroup[len(r.Cgroup)-1:], []string{"0::/"}) {
		t.Errorf("cgroup %v, want the namespace root", r.Cgroup)
	}
	if e := r.Enforced; e.Backend != "namespaces" || e.Seccomp != "default" || e.SeccompRules == 0 || !e.NoNewPrivs {
		t.Errorf("enforced %+v", e)
	}
	if testutil.ExpectCgroups() && (r.Enforced.Cgroup == nil || r.Enforced.Cgroup.Pids != 256) {
		t.Errorf("enforced cgroup %+v, want pids 256", r.Enforced.Cgroup)
	}
}

// The report follows the policy: a rule allowing ptrace makes it
// reachable, another rlimit shows, and a kill rule's syscall is skipped
// (calling it would end the sandbox and the report).
func TestPostureFollowsPolicy(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(pol, []byte(`{"open_files": 64, "seccomp": {"rules": [
		{"names": ["ptrace"], "action": "allow"}, {"names": ["acct", "getppid"], "action": "kill"}]}}`), 0o644)
	r := postureJSON(t, "--policy", pol)
	if s := sysResult(r, "ptrace"); s.Class != "reachable" || slices.Contains(r.Syscalls.EPERM, "ptrace") {
		t.Errorf("ptrace under an allow rule: %+v", s)
	}
	for _, name := range []string{"acct", "getppid"} {
		if s := sysResult(r, name); s.Class != "skipped" {
			t.Errorf("%s under a kill rule: %+v, want skipped", name, s)
		}
	}
	// The prober's own getppid is left out too, and says so.
	if len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0], "getppid: not called") || r.PPID != 0 {
		t.Errorf("errors %q, ppid %d", r.Errors, r.PPID)
	}
	if l := rlimit(r, "nofile"); l.Soft != 64 || l.Hard != 64 {
		t.Errorf("nofile %+v, want 64/64", l)
	}
	if s := sysResult(r, "mount"); s.Class != "eperm" {
		t.Errorf("mount: %+v, the default profile still applies", s)
	}
}

func TestPostureTextAndRefusals(t *testing.T) {
	testutil.RequireUserNS(t)
	var out, errb bytes.Buffer
	if code := postureCmd(nil, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"user new, pid new, net new", "cap eff:       0000000000000000 (none)",
		"no_new_privs:  1", "mode 2", "ptrace", "clone3", "/tmp ", "interfaces:    lo\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	for _, args := range [][]string{{"--backend", "process"}, {"--timeout", "soon"}} {
		errb.Reset()
		if code := postureCmd(args, strings.NewReader(""), &out, &errb); code != exitSetup || !strings.Contains(errb.String(), "invalid") {
			t.Errorf("%v: exit %d %q, want 125", args, code, errb.String())
		}
	}
	errb.Reset()
	if code := postureCmd([]string{"extra"}, strings.NewReader(""), &out, &errb); code != exitSetup || !strings.Contains(errb.String(), "do not retry: fix the request") {
		t.Errorf("positional argument: exit %d %q, want 125 with the retry hint", code, errb.String())
	}
}
