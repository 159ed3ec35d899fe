package main

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The CLI scripts/build makes leaves the daemons out (tag airlock_slim):
// none of their heavy modules is linked into it, all of them into the
// airlock-daemon beside it; airlock serve and airlock mcp run that binary
// (their --help answers through it), and without it they are refused,
// naming it and the fix.
func TestSlimCLIExecsDaemon(t *testing.T) {
	bin := testutil.BinDir(t)
	heavy := []string{"github.com/prometheus/client_golang", "github.com/modelcontextprotocol/go-sdk"}
	for name, want := range map[string]bool{"airlock": false, "airlock-daemon": true} {
		info, err := buildinfo.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, mod := range heavy {
			linked := false
			for _, d := range info.Deps {
				linked = linked || d.Path == mod
			}
			if linked != want {
				t.Errorf("%s: %s linked %v, want %v", name, mod, linked, want)
			}
		}
	}
	run := func(airlock string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		cmd := exec.Command(airlock, args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	for _, c := range []string{"serve", "mcp"} {
		if code, out, errOut := run(filepath.Join(bin, "airlock"), c, "--help"); code != 0 || !strings.Contains(out, "usage: airlock "+c) {
			t.Errorf("airlock %s --help: exit %d, stdout %q, stderr %q", c, code, out, errOut)
		}
	}
	alone := filepath.Join(t.TempDir(), "airlock")
	data, err := os.ReadFile(filepath.Join(bin, "airlock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"serve", "mcp"} {
		code, out, errOut := run(alone, c, "--help")
		if code != exitSetup || out != "" || !strings.Contains(errOut, "no airlock-daemon beside") || !strings.Contains(errOut, "scripts/build makes it") {
			t.Errorf("airlock %s alone: exit %d, stdout %q, stderr %q; want 125 naming airlock-daemon", c, code, out, errOut)
		}
	}
}
