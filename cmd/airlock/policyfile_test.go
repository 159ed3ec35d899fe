package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A YAML policy file works wherever a JSON one does (run --policy,
// policy validate and show); --preset with --policy is refused before
// anything runs, naming both, instead of the preset being dropped.
func TestPolicyFileYAMLAndPresetConflict(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.yaml")
	// 6 s: the program must print before the timeout, in the loaded
	// emulated guest too (500 ms ran out during setup there once; 2 s,
	// before sh's echo, in TestWorkspaceAndPolicyFile).
	os.WriteFile(pol, []byte("# a YAML policy\ntimeout: 6s\nsetenv:\n  FROM: yaml\n"), 0o644)
	if _, res, _ := result(t, "--policy", pol, "--", "sh", "-c", `echo $FROM; sleep 100`); res.Status != "timeout" || res.Stdout != "yaml\n" {
		t.Errorf("YAML policy file: %+v", res)
	}
	for _, cmd := range [][]string{{"policy", "validate", pol}, {"policy", "show", pol}} {
		var out, errb strings.Builder
		if code := policyCmd(cmd[1:], &out, &errb); code != 0 || !strings.Contains(out.String(), "6s") && cmd[1] == "show" {
			t.Errorf("%v: exit %d: %s%s", cmd, code, out.String(), errb.String())
		}
	}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	code, _, errOut := airlock(t, "", "--preset", "default", "--policy", pol, "--workspace", ws, "--", "touch", "ran")
	if code != exitSetup || !strings.Contains(errOut, "--preset") || !strings.Contains(errOut, "--policy") {
		t.Errorf("--preset with --policy: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the program ran although the flags were refused")
	}
	if code, _, errOut := airlock(t, "", "--preset", "default", "--", "true"); code != 0 {
		t.Errorf("--preset alone: exit %d: %s", code, errOut)
	}
}

// A policy weaker than the default runs, as asked, but never silently:
// one stderr line per weakening, the same list in the result's
// enforced.weakened, and policy validate/show print it. The default
// policy names none.
func TestWeakerPolicySaysSo(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "weak.yaml")
	os.WriteFile(pol, []byte("net: host\nseccomp:\n  rules:\n    - {names: [ptrace, bpf], action: allow}\n"), 0o644)
	want := []string{"net: host", "seccomp: allows bpf, ptrace"}
	code, out, errOut := airlock(t, "", "--json", "--policy", pol, "--", "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(errOut, "airlock: weaker than the default policy: "); n != len(want) {
		t.Errorf("%d weakening lines on stderr, want %d: %q", n, len(want), errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) || !strings.Contains(out, w) {
			t.Errorf("%q missing from stderr %q or the result", w, errOut)
		}
	}
	var validate, show, errb strings.Builder
	if policyCmd([]string{"validate", pol}, &validate, &errb) != 0 || policyCmd([]string{"show", pol}, &show, &errb) != 0 {
		t.Fatalf("policy validate/show: %s", errb.String())
	}
	for _, w := range want {
		if !strings.Contains(validate.String(), w) || !strings.Contains(show.String(), w) {
			t.Errorf("%q missing from validate %q or show", w, validate.String())
		}
	}
	code, res, raw := result(t, "--", "true")
	if code != 0 || len(res.Enforced.Weakened) != 0 || strings.Contains(fmt.Sprint(raw["enforced"]), "weakened") {
		t.Errorf("the default policy: exit %d, weakened %q", code, res.Enforced.Weakened)
	}
	if _, _, errOut := airlock(t, "", "--", "true"); strings.Contains(errOut, "weaker") {
		t.Errorf("the default policy warned: %q", errOut)
	}
}
