package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func policyRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := policyCmd(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPolicyCommands(t *testing.T) {
	code, out, _ := policyRun("compile", "default")
	if code != 0 || !strings.HasPrefix(out, "# seccomp profile default: ") || !strings.Contains(out, "ret #") ||
		!strings.Contains(out, "ERRNO(38)") || !strings.Contains(out, "KILL_PROCESS") {
		t.Fatalf("compile: exit %d\n%.400s", code, out)
	}
	if code, out, _ := policyRun("validate"); code != 0 || !strings.Contains(out, "valid; seccomp profile default") {
		t.Errorf("validate: %d %q", code, out)
	}
	if code, out, _ := policyRun("show", "default"); code != 0 || !strings.Contains(out, `"default_action": "errno"`) || !strings.Contains(out, `"io_uring_setup"`) {
		t.Errorf("show: %d %.300s", code, out)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"seccomp": {"rules": [{"names": ["no_such_call"], "action": "kill"}]}}`), 0o644)
	if code, _, errOut := policyRun("validate", bad); code == 0 || !strings.Contains(errOut, "no_such_call") {
		t.Errorf("deny rule naming an unknown syscall: exit %d %q", code, errOut)
	}
	oci := filepath.Join(dir, "profile.json")
	os.WriteFile(oci, []byte(`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"}]}`), 0o644)
	if code, out, errOut := policyRun("validate", oci); code != 0 || !strings.Contains(out, "2 rules") {
		t.Errorf("OCI profile: exit %d %q %q", code, out, errOut)
	}
	// Usage errors are invalid requests: 125 with the retry hint, as
	// run's; a policy found invalid stays 1.
	for _, args := range [][]string{{"frobnicate"}, {"valdate"}, {}, {"show", "default", "extra"}, {"show", "--frobnicate"}, {"--json"}} {
		code, out, errOut := policyRun(args...)
		if code != exitSetup || out != "" || !strings.Contains(errOut, "do not retry: fix the request") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("policy %q: exit %d, stdout %q, stderr %q; want 125 and one line", args, code, out, errOut)
		}
	}
	if _, _, errOut := policyRun("valdate"); !strings.Contains(errOut, "did you mean validate") {
		t.Errorf("policy valdate: %q", errOut)
	}
}

// A policy file's seccomp rules apply to `airlock run`, and the result
// says which profile and how many rules.
func TestRunWithPolicyRules(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(pol, []byte(`{"seccomp": {"rules": [{"names": ["uname"], "action": "errno", "errno": 13}]}}`), 0o644)
	code, res, _ := result(t, "--policy", pol, "--", "uname")
	if code == 0 || !strings.Contains(res.Stderr, "Permission denied") {
		t.Errorf("uname under errno 13: exit %d, stderr %q", code, res.Stderr)
	}
	if res.Enforced.Seccomp != "default" || res.Enforced.SeccompRules < 300 || res.Enforced.SeccompInstructions < 100 {
		t.Errorf("enforced %+v", res.Enforced)
	}
}
