package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
)

// The airlock CLI made by scripts/build runs its sandboxes with the
// airlock-init beside it: paired, the run is the default policy's; with
// an init of another build there, nothing runs and the error names the
// fix; with none there, airlock re-executes itself.
func TestSiblingInit(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	layouts := map[string]map[string]string{ // file in dir -> built binary
		"paired":  {"airlock": "airlock", "airlock-init": "airlock-init"},
		"foreign": {"airlock": "airlock", "airlock-init": "airlock-init-other"},
		"alone":   {"airlock": "airlock"},
	}
	for name, files := range layouts {
		t.Run(name, func(t *testing.T) {
			dir := testutil.WorldReadableDir(t) // as root the init runs as uid 65534
			for dst, src := range files {
				if err := copyFile(filepath.Join(dir, dst), filepath.Join(bin, src)); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(dir, "airlock"), "run", "--json", "--", "/bin/sh", "-c", "echo RAN")
			cmd.Env = []string{"PATH=/usr/bin:/bin", "XDG_CACHE_HOME=" + t.TempDir()}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var res nsjail.Result
			_ = json.Unmarshal(out.Bytes(), &res)
			if name == "foreign" {
				if cmd.ProcessState.ExitCode() != exitSetup || res.Status != nsjail.StatusSetupError || strings.Contains(res.Stdout, "RAN") ||
					!strings.Contains(res.Error, "init binary") || !strings.Contains(errb.String(), "scripts/build") {
					t.Errorf("foreign init: %v, result %+v, stderr %q", err, res, errb.String())
				}
				return
			}
			if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "RAN\n" || res.Enforced.Seccomp != "default" {
				t.Errorf("%v, result %+v, stderr %q", err, res, errb.String())
			}
		})
	}
}
