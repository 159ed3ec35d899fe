package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The CLI's runtime starts with one P (its entry appends GOMAXPROCS=1 to
// the environment the runtime reads, internal/entryvec), and what it
// starts sees its caller's environment all the same: a program's
// --env-pass GOMAXPROCS finds none where the caller set none and the
// caller's own where it set one, on every path (launched at the CLI's
// start, launched later, and run by airlock-daemon, which the CLI execs
// with its environment). The runtime's first scheduler trace, printed
// by its monitor thread at its first cycle, says it started with one P
// where the caller set none and the CLI runs the program itself
// (airlock-daemon's trace, after the exec, can come before the CLI's).
func TestCLIStartEnvironment(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	show := "env | grep -E '^(GOMAXPROCS|AIRLOCK_T_PASSED)=' | sort"
	pass := []string{"--env-pass", "GOMAXPROCS", "--env-pass", "AIRLOCK_T_PASSED"}
	sched := regexp.MustCompile(`(?m)^SCHED 0ms: gomaxprocs=(\d+) `)
	trace := "GODEBUG=schedtrace=" + strconv.FormatInt(schedtracePeriod(t), 10)
	for _, caller := range []string{"", "3"} {
		for name, c := range map[string]struct {
			args  []string
			stdin string
		}{
			"run":        {append(append([]string{"run"}, pass...), "--", "/bin/sh", "-c", show), ""},
			"json":       {append(append([]string{"run", "--json"}, pass...), "--", "/bin/sh", "-c", show), ""},
			"exec code":  {append(append([]string{"exec", "--lang", "sh"}, pass...), "-c", show), ""},
			"exec stdin": {append(append([]string{"exec", "--lang", "sh"}, pass...), "-"), show + "\n"},
		} {
			t.Run(name+"/GOMAXPROCS="+caller, func(t *testing.T) {
				cmd := exec.Command(bin, c.args...)
				cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
					return strings.HasPrefix(kv, "GOMAXPROCS=") || strings.HasPrefix(kv, "GODEBUG=")
				})
				cmd.Env = append(cmd.Env, "AIRLOCK_T_PASSED=x y", trace)
				if caller != "" {
					cmd.Env = append(cmd.Env, "GOMAXPROCS="+caller)
				}
				cmd.Stdin = strings.NewReader(c.stdin)
				code, out, errs := runCLI(t, cmd)
				if code != 0 {
					t.Fatalf("exit %d: %s %s", code, out, errs)
				}
				want := "AIRLOCK_T_PASSED=x y\n"
				if caller != "" {
					want = "AIRLOCK_T_PASSED=x y\nGOMAXPROCS=" + caller + "\n"
				}
				if name == "json" {
					want = `"stdout": "` + strings.ReplaceAll(want, "\n", `\n`) + `"`
				}
				if !strings.Contains(out, want) {
					t.Errorf("the program's environment: got %q, want %q", out, want)
				}
				if name == "exec stdin" || caller != "" {
					// The CLI execs airlock-daemon (no entry of its own, 2 Ps
					// at its start), whose trace can come first; and with the
					// caller's GOMAXPROCS the runtime's first trace can come
					// after main set 1 (seen in the emulated guest). The
					// variable reaching the program says it was left alone.
					return
				}
				m := sched.FindStringSubmatch(errs)
				if m == nil {
					t.Fatalf("no scheduler trace of the CLI's start in its stderr: %q", errs)
				}
				if m[1] != "1" && runtime.NumCPU() > 1 {
					t.Errorf("the CLI's runtime started with %s Ps, want 1", m[1])
				}
			})
		}
	}
}

// schedtracePeriod is a GODEBUG=schedtrace period, in ms, with which the
// runtime's monitor thread prints a trace at its first cycle and no
// other before a run ends. The monitor prints when CLOCK_MONOTONIC,
// which counts from the machine's boot, has passed its last trace (0 at
// the start) by the period: a period longer than the uptime, as 100 s is
// in a guest booted for a test pass, prints nothing at the start. Half
// the uptime: the first cycle prints, the next comes that much later.
func schedtracePeriod(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return max(1, ts.Nano()/2e6)
}

// The CLI's entry maps its image ahead (internal/prefault) before
// anything else, its runtime's start included: its first two system
// calls populate its read-only part (from its text's page) and its
// writable part, and both succeed on Linux 5.14 and later (before, both
// fail with EINVAL and the CLI starts as it did).
func TestCLIEntryPrefaults(t *testing.T) {
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	strace := testutil.RequireBinary(t, "strace")
	log := filepath.Join(t.TempDir(), "strace")
	if out, err := exec.Command(strace, "-o", log, bin, "--version").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "execve(") {
			calls = append(calls, strings.TrimSpace(line))
		}
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^madvise\(0x[0-9a-f]+000, \d+, MADV_POPULATE_READ\) = 0$`),
		regexp.MustCompile(`^madvise\(0x[0-9a-f]+000, \d+, MADV_POPULATE_WRITE\) = 0$`),
	}
	if len(calls) < len(want) {
		t.Fatalf("the CLI's system calls: %q", calls)
	}
	for i, re := range want {
		if !re.MatchString(calls[i]) {
			t.Errorf("system call %d of the CLI: %q, want %s", i+1, calls[i], re)
		}
	}
}
