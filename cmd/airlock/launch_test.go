package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The CLI starts the sandbox's init before it makes its Executor
// (executor.Launch) and runs the program in it, whatever the output mode
// and for code as for a program: its phase trace (AIRLOCK_PHASES) has
// the jail's "ahead" record, which only nsjail's Launched.Start logs. On
// a cgroup v2 host, where a cold init is born in its cgroup, it never
// launches ahead. (A launch the run does not fit is proven to fall back
// cold by nsjail's TestLaunched.)
func TestCLILaunchesAhead(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	want := cgroups.HostMode() != cgroups.Unified
	ahead := regexp.MustCompile(`(?m)^jail-ahead [0-9.]+$`)
	for name, args := range map[string][]string{
		"run":          {"run", "--", "/bin/sh", "-c", "echo hi"},
		"json":         {"run", "--json", "--", "/bin/true"},
		"max-output":   {"run", "--max-output", "1000", "--", "/bin/true"},
		"exec code":    {"exec", "--lang", "sh", "-c", "echo hi"},
		"uid and json": {"run", "--json", "--uid", "0", "--", "/bin/true"},
	} {
		t.Run(name, func(t *testing.T) {
			trace := filepath.Join(t.TempDir(), "phases")
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "AIRLOCK_PHASES="+trace)
			code, out, errs := runCLI(t, cmd)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			b, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			if got := ahead.Match(b); got != want {
				t.Errorf("launched ahead: %v, want %v (cgroup mode %s); trace:\n%s", got, want, cgroups.HostMode(), b)
			}
		})
	}
}
