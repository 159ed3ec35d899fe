package main

import (
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
	os.WriteFile(pol, []byte("# a YAML policy\ntimeout: 500ms\nsetenv:\n  FROM: yaml\n"), 0o644)
	if _, res, _ := result(t, "--policy", pol, "--", "sh", "-c", `echo $FROM; sleep 100`); res.Status != "timeout" || res.Stdout != "yaml\n" {
		t.Errorf("YAML policy file: %+v", res)
	}
	for _, cmd := range [][]string{{"policy", "validate", pol}, {"policy", "show", pol}} {
		var out, errb strings.Builder
		if code := policyCmd(cmd[1:], &out, &errb); code != 0 || !strings.Contains(out.String(), "500ms") && cmd[1] == "show" {
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
