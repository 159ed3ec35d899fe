package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
)

// The airlock CLI made by scripts/build runs its sandboxes with the
// airlock-init beside it, started by the airlock-spawn beside it: paired,
// the run is the default policy's (with or without the helper); with an
// init of another build there, nothing runs and the error names the fix;
// with none there, airlock re-executes itself; without airlock-spawn this
// CLI (no cgo: no reaper of its own) refuses to run, naming it; and it is that helper that
// starts them (a broken one there fails the run).
func TestSiblingInit(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	layouts := map[string]map[string]string{ // file in dir -> built binary
		"paired":        {"airlock": "airlock", "airlock-init": "airlock-init", "airlock-spawn": "airlock-spawn"},
		"no helper":     {"airlock": "airlock", "airlock-init": "airlock-init"},
		"foreign":       {"airlock": "airlock", "airlock-init": "airlock-init-other", "airlock-spawn": "airlock-spawn"},
		"alone":         {"airlock": "airlock"},
		"helper only":   {"airlock": "airlock", "airlock-spawn": "airlock-spawn"},
		"broken helper": {"airlock": "airlock", "airlock-init": "airlock-init", "airlock-spawn": ""},
	}
	for name, files := range layouts {
		t.Run(name, func(t *testing.T) {
			dir := testutil.WorldReadableDir(t) // as root the init runs as uid 65534
			for dst, src := range files {
				if src == "" { // a helper that reports nothing
					if err := os.WriteFile(filepath.Join(dir, dst), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := copyFile(filepath.Join(dir, dst), filepath.Join(bin, src)); err != nil {
					t.Fatal(err)
				}
			}
			cache := t.TempDir()
			warmFilterCache(t, bin, cache)
			cmd := exec.Command(filepath.Join(dir, "airlock"), "run", "--json", "--", "/bin/sh", "-c", "echo RAN")
			cmd.Env = []string{"PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + cache}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var res nsjail.Result
			_ = json.Unmarshal(out.Bytes(), &res)
			if name == "broken helper" {
				if cmd.ProcessState.ExitCode() != exitSetup || res.Status != nsjail.StatusSetupError || strings.Contains(res.Stdout, "RAN") ||
					!strings.Contains(errb.String(), "spawn helper ended without a report") {
					t.Errorf("broken helper: %v, result %+v, stderr %q", err, res, errb.String())
				}
				return
			}
			if name == "foreign" {
				if cmd.ProcessState.ExitCode() != exitSetup || res.Status != nsjail.StatusSetupError || strings.Contains(res.Stdout, "RAN") ||
					!strings.Contains(res.Error.String(), "init binary") || !strings.Contains(errb.String(), "scripts/build") {
					t.Errorf("foreign init: %v, result %+v, stderr %q", err, res, errb.String())
				}
				return
			}
			if files["airlock-spawn"] == "" {
				// No reaper: this CLI has no cgo (none embedded), so
				// nothing runs, and the error names the fix.
				if cmd.ProcessState.ExitCode() != 125 || res.Status != nsjail.StatusError || strings.Contains(res.Stdout, "RAN") ||
					!strings.Contains(errb.String(), "reaper") || !strings.Contains(errb.String(), "airlock-spawn") {
					t.Errorf("no reaper: %v, result %+v, stderr %q", err, res, errb.String())
				}
				return
			}
			if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "RAN\n" || res.Enforced.Seccomp != "default" || res.Enforced.Pid1 != "reaper" {
				t.Errorf("%v, result %+v, stderr %q", err, res, errb.String())
			}
		})
	}
}

// warmFilterCache runs the default policy once by the installation in
// bin with the CLI's cache at cache (XDG_CACHE_HOME): a CLI that
// scripts/build made without cgo loads the filters airlock-daemon
// compiled from there (it shares the build token). The default policy's
// own filter is compiled ahead (seccomp.Precompiled) and never cached,
// so a layout without airlock-daemon runs it whatever this leaves.
func warmFilterCache(t *testing.T, bin, cache string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "airlock"), "run", "--", "/bin/true")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + cache}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("filling the filter cache: %v\n%s", err, out)
	}
}
