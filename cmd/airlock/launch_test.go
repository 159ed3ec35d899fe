package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The CLI starts the sandbox's init before it makes its Executor and
// runs the program in it, whatever the output mode and for code as for a
// program: its phase trace (AIRLOCK_PHASES) has the jail's "ahead"
// record, which only nsjail's Launched.Start logs. For `airlock run`
// with only flags that do not change what is launched, the init was
// started as the CLI's process started (cmd/airlock/internal/early) and
// adopted: the trace has "adopted", which only nsjail.Adopt logs, and so
// for `airlock exec` with -c; with any other flag (here --json,
// --max-output, --uid) or exec's code from a file, it was started by
// executor.Launch instead. On a cgroup v2 host, where a cold
// init is born in its cgroup, it never launches ahead. (A launch the run
// does not fit is proven to fall back cold by nsjail's TestLaunched and
// TestAdopted.)
func TestCLILaunchesAhead(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	v1 := cgroups.HostMode() != cgroups.Unified
	script := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(script, []byte("echo from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ahead := regexp.MustCompile(`(?m)^jail-ahead [0-9.]+$`)
	adopted := regexp.MustCompile(`(?m)^jail-adopted [0-9.]+$`)
	for name, c := range map[string]struct {
		args  []string
		early bool
		out   string
	}{
		"run":          {[]string{"run", "--", "/bin/sh", "-c", "echo hi"}, true, "hi\n"},
		"run flags":    {[]string{"run", "--best-effort", "--timeout", "20s", "--memory=256MiB", "--pids", "64", "--setenv", "A=x", "/bin/sh", "-c", "echo $A"}, true, "x\n"}, // best-effort: rootless on v1 has no cgroup
		"json":         {[]string{"run", "--json", "--", "/bin/true"}, false, ""},
		"max-output":   {[]string{"run", "--max-output", "1000", "--", "/bin/true"}, false, ""},
		"exec code":    {[]string{"exec", "--lang", "sh", "-c", "echo hi"}, true, "hi\n"},
		"exec file":    {[]string{"exec", "--lang", "sh", script}, false, "from a file\n"},
		"uid":          {[]string{"run", "--uid", "0", "--", "/bin/sh", "-c", "id -u"}, false, "0\n"},
		"uid and json": {[]string{"run", "--json", "--uid", "0", "--", "/bin/true"}, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			trace := filepath.Join(t.TempDir(), "phases")
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append(os.Environ(), "AIRLOCK_PHASES="+trace)
			code, out, errs := runCLI(t, cmd)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			if c.out != "" && out != c.out {
				t.Errorf("output %q, want %q", out, c.out)
			}
			b, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			if got := ahead.Match(b); got != v1 {
				t.Errorf("launched ahead: %v, want %v (cgroup mode %s); trace:\n%s", got, v1, cgroups.HostMode(), b)
			}
			if got, want := adopted.Match(b), v1 && c.early; got != want {
				t.Errorf("launched at the process's start: %v, want %v; trace:\n%s", got, want, b)
			}
		})
	}
}

// An init started as the CLI started is not left behind when the CLI
// ends before its run: here a flag's value is refused after the launch
// (--memory is launch-neutral, so the launch was made), or the language
// once the launch was handed to the executor. The CLI's phase trace says
// that it ended an untaken launch itself; from the host, no process of
// that installation's binaries remains.
func TestCLIEarlyLaunchUnused(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(filepath.Join(bin, "airlock")))
	dir := testutil.WorldReadableDir(t) // as root the init runs as uid 65534
	for _, f := range []string{"airlock", "airlock-init", "airlock-spawn"} {
		if err := copyFile(filepath.Join(dir, f), filepath.Join(bin, f)); err != nil {
			t.Fatal(err)
		}
	}
	// The default filter cached for this build, so that the run reaches
	// the language's refusal without airlock-daemon (not copied here).
	cache := t.TempDir()
	warmFilterCache(t, bin, cache)
	v1 := cgroups.HostMode() != cgroups.Unified
	abandoned := regexp.MustCompile(`(?m)^early-abandoned [0-9.]+$`)
	for _, c := range []struct {
		args  []string
		taken bool // by the run, which then closes it
	}{
		{[]string{"run", "--memory", "lots", "--", "/bin/true"}, false},
		{[]string{"run", "--timeout", "-1s", "/bin/true"}, false},
		{[]string{"exec", "--lang", "nosuchlang", "-c", "x"}, true},
	} {
		args := c.args
		trace := filepath.Join(t.TempDir(), "phases")
		cmd := exec.Command(filepath.Join(dir, "airlock"), args...)
		cmd.Env = append(os.Environ(), "AIRLOCK_PHASES="+trace, "XDG_CACHE_HOME="+cache)
		code, out, errs := runCLI(t, cmd)
		if code != exitSetup || !strings.Contains(errs, "--") {
			t.Errorf("%q: exit %d, %q %q: want the flag refused", args, code, out, errs)
		}
		// The launch was made (cgroup v1) and the CLI, not the kernel's
		// parent-death signal, ended it: "early-abandoned" is its mark.
		b, _ := os.ReadFile(trace)
		if got, want := abandoned.Match(b), v1 && !c.taken; got != want {
			t.Errorf("%q: abandoned at exit: %v, want %v; trace:\n%s", args, got, want, b)
		}
		var left []string
		if !testutil.WaitFor(10*time.Second, func() bool { left = running(dir); return len(left) == 0 }) {
			t.Errorf("%q: left running: %q", args, left)
		}
	}
}

// running lists the processes whose executable is in dir.
func running(dir string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && filepath.Dir(exe) == dir {
			found = append(found, e.Name()+" "+exe)
		}
	}
	return found
}
