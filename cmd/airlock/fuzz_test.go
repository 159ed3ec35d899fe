package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/rootfs"
	"golang.org/x/sys/unix"
)

// fuzzPolicies are the only policy files the fuzzer may name, as
// "--policy @NAME": a fuzzed path could name /dev/zero or a FIFO and
// hang the target. They cover what the flags cannot set (seccomp rules
// and profiles, best_effort, file limits).
var fuzzPolicies = map[string]string{
	"default": `{}`,
	"rules":   `{"open_files": 64, "seccomp": {"rules": [{"names": ["ptrace"], "action": "allow"}, {"names": ["acct"], "action": "kill"}, {"names": ["uname"], "action": "errno", "errno": 13}]}}`,
	"none":    `{"seccomp": {"profile": "none"}}`,
	"oci":     `{"seccomp": {"profile": "OCI"}}`,
	"best":    `{"best_effort": true, "memory": "64MiB", "pids": 32, "cpus": 0.5, "file_size": 4096}`,
	"process": `{"backend": "process", "best_effort": true}`,
	"hostnet": `{"net": "host", "mounts": [{"type": "tmpfs", "target": "/scratch", "size": "1MiB"}]}`,
	"bad":     `{"timeout": "-1s"}`,
	"unknown": `{"seccomp": {"rules": [{"names": ["no_such_call"], "action": "kill"}]}}`,
}

// fuzzOCI is a small Docker-format profile the "oci" policy imports.
const fuzzOCI = `{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
	{"names": ["read", "write", "exit_group", "execve", "brk", "mmap"], "action": "SCMP_ACT_ALLOW"},
	{"names": ["getppid"], "action": "SCMP_ACT_KILL"}]}`

// FuzzRunFlags parses an argv (NUL-separated) exactly as `airlock run`
// does and resolves it to a jail spec. Properties: no panic; every error
// is a flag error or typed (invalid, unsupported, unavailable); and a
// resolved spec never loses confinement silently: every namespace unless
// the policy chose host network or the process backend (or best_effort
// fell back to it and says so), a seccomp filter unless the policy chose
// none (or best_effort says it is not enforced), a positive timeout,
// never host root, bounded memory and tasks, /proc and /dev only as
// airlock builds them, and no environment variable the policy did not
// name. no_new_privs and the capability drop have no field in the spec:
// the init applies them unconditionally.
func FuzzRunFlags(f *testing.F) {
	dir := f.TempDir()
	oci := filepath.Join(dir, "docker-profile.json")
	if err := os.WriteFile(oci, []byte(fuzzOCI), 0o644); err != nil {
		f.Fatal(err)
	}
	files := map[string]string{}
	for name, body := range fuzzPolicies {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, `"OCI"`, `"`+oci+`"`)), 0o644); err != nil {
			f.Fatal(err)
		}
		files["@"+name] = p
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ex.Close() })
	// testdata/fuzz/FuzzRunFlags has more; these run wherever the test
	// binary does (the rootless pass runs outside the package directory).
	f.Add("--timeout\x001s\x00--\x00true")
	f.Add("--memory\x00256MiB\x00--pids\x0064\x00--cpus\x000.5\x00--\x00true")
	f.Add("--best-effort\x00--memory\x001GiB\x00--cpus\x002\x00--\x00true")
	f.Add("--policy\x00@rules\x00--setenv\x00A=b\x00--env-pass\x00HOME\x00--\x00env")
	f.Add("--policy\x00@process\x00--workspace\x00/tmp\x00--\x00true")

	f.Fuzz(func(t *testing.T, in string) {
		fs, rf := runFlagSet("run", "", io.Discard)
		if err := fs.Parse(strings.Split(in, "\x00")); err != nil {
			return // a flag error: runCmd exits 2
		}
		if rf.policyFile != "" {
			p, ok := files[rf.policyFile]
			if !ok {
				return
			}
			rf.policyFile = p
		}
		p, err := rf.policy()
		if err != nil {
			requireTyped(t, "policy", err)
			return
		}
		args := fs.Args()
		if len(args) == 0 {
			args = []string{"true"}
		}
		spec, notEnforced, err := ex.Resolve(executor.Request{Args: args, Policy: p})
		if err != nil {
			requireTyped(t, "resolve", err)
			return
		}
		checkConfined(t, p, spec, notEnforced)
	})
}

func requireTyped(t *testing.T, stage string, err error) {
	t.Helper()
	if !errors.Is(err, policy.ErrInvalid) && !errors.Is(err, policy.ErrUnsupported) && !errors.Is(err, policy.ErrUnavailable) {
		t.Fatalf("%s: untyped error %T: %v", stage, err, err)
	}
}

func checkConfined(t *testing.T, p policy.Policy, spec nsjail.Spec, notEnforced []string) {
	t.Helper()
	waived := func(control string) bool {
		return p.BestEffort.Has(policy.DegradeOf(control)) && slices.Contains(notEnforced, control)
	}
	if spec.Process && p.Backend != "process" && !waived("namespaces") {
		t.Fatalf("process backend (no namespaces) without being asked: backend %q, not enforced %v", p.Backend, notEnforced)
	}
	if spec.HostNetwork && p.Net != policy.NetHost {
		t.Fatalf("host network with net %q", p.Net)
	}
	if spec.Seccomp == nil && p.Seccomp.Profile != "none" && !waived("seccomp") {
		t.Fatalf("no seccomp filter with profile %q, not enforced %v", p.Seccomp.Profile, notEnforced)
	}
	if spec.Seccomp != nil && len(spec.Seccomp.Program) == 0 {
		t.Fatal("an empty seccomp program")
	}
	if spec.Timeout <= 0 {
		t.Fatalf("timeout %v", spec.Timeout)
	}
	// As root, 0 stands for 65534 (nsjail.Spec); a negative id is refused
	// by the launcher. Resolve must never choose another id.
	if spec.HostUID != 0 || spec.HostGID != 0 {
		t.Fatalf("host ids %d/%d: the sandbox maps to the caller (rootless) or 65534 (root), nothing else", spec.HostUID, spec.HostGID)
	}
	rl := map[int]uint64{}
	for _, r := range spec.Rlimits {
		if r.Cur != r.Max {
			t.Fatalf("rlimit %s soft %d != hard %d", nsjail.RlimitName(r.Resource), r.Cur, r.Max)
		}
		rl[r.Resource] = r.Cur
	}
	if rl[unix.RLIMIT_NOFILE] != uint64(p.OpenFiles) || rl[unix.RLIMIT_FSIZE] != uint64(p.FileSize) {
		t.Fatalf("rlimits %v for open_files %d, file_size %d", rl, p.OpenFiles, p.FileSize)
	}
	if v, ok := rl[unix.RLIMIT_CORE]; !ok || v != 0 {
		t.Fatalf("core dumps allowed: %v", rl)
	}
	if spec.CgroupLimits == nil {
		if rl[unix.RLIMIT_NPROC] != uint64(p.PidsLimit()) || rl[unix.RLIMIT_DATA] != uint64(p.MemoryLimit()) {
			t.Fatalf("no cgroup and tasks/memory not bounded by rlimits: %v", rl)
		}
		if (p.Memory != 0 || p.Pids != 0 || p.CPUs > 0) && !p.BestEffort.Has(policy.DegradeLimits) {
			t.Fatal("explicit limits without a cgroup accepted without best_effort")
		}
		if p.CPUs > 0 && !waived("cpus") {
			t.Fatalf("cpus %g dropped without being listed: %v", p.CPUs, notEnforced)
		}
	} else if c := spec.CgroupLimits; c.Memory != p.MemoryLimit() || c.Pids != p.PidsLimit() || c.CPUs != p.CPUs {
		t.Fatalf("cgroup limits %+v for policy memory %d pids %d cpus %g", *c, p.MemoryLimit(), p.PidsLimit(), p.CPUs)
	}
	for _, op := range spec.Plan.Ops {
		switch {
		case op.Target == "/proc" || strings.HasPrefix(op.Target, "/proc/"):
			if op.Kind != rootfs.KindProc && op.Kind != rootfs.KindCover && op.Kind != rootfs.KindMask {
				t.Fatalf("%s over /proc: %+v", op.Kind, op)
			}
		case op.Target == "/dev" || strings.HasPrefix(op.Target, "/dev/"):
			if op.Kind == rootfs.KindBind && !op.CharDevice {
				t.Fatalf("a bind into /dev that is not a checked device node: %+v", op)
			}
		}
	}
	if !spec.Process && (len(spec.Plan.Ops) == 0 || spec.Plan.Ops[0].Target != "/usr" || !spec.Plan.Ops[0].ReadOnly) {
		t.Fatalf("plan does not start with the read-only /usr: %+v", spec.Plan.Ops[:min(1, len(spec.Plan.Ops))])
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true}
	if spec.Process && spec.Landlock.ABI > 0 {
		allowed["TMPDIR"] = true // the workspace: under Landlock the one writable place
	}
	for _, k := range p.EnvPass {
		allowed[k] = true
	}
	for k := range p.Setenv {
		allowed[k] = true
	}
	for _, kv := range spec.Env {
		if k, _, _ := strings.Cut(kv, "="); !allowed[k] {
			t.Fatalf("variable %q in the sandbox's environment was never named by the policy", k)
		}
	}
}
