package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/bpfprog"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// outerSeccompEnv gives the errno, as a number, with which the CLI makes
// every seccomp(2) call of its process tree fail, from before it starts
// (denySeccomp, from TestMain): a container runtime's profile that
// refuses the call itself, where outerFilterEnv refuses only loads.
const outerSeccompEnv = "AIRLOCK_TEST_DENY_SECCOMP"

// denySeccomp installs, on every thread of this process and so on every
// process it starts, a filter under which every seccomp(2) call after
// it fails with errno; everything else is allowed.
func denySeccomp(e syscall.Errno) error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("the outer filter is written for amd64, not %s", runtime.GOARCH)
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	prog := bpfprog.Program{
		{Code: ld, K: 4},
		{Code: jeq, K: unix.AUDIT_ARCH_X86_64, Jf: 2},
		{Code: ld, K: 0},
		{Code: jeq, K: unix.SYS_SECCOMP, Jt: 1},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(e)},
	}
	return loadOuter(prog)
}

// --best-effort degrades only what it names. The CLI runs under an
// outer filter: one that refuses the seccomp(2) call itself (a
// container's profile), then one that refuses only filter loads. With
// --best-effort alone (limits, here with an explicit --memory, which
// rootless on cgroup v1 needs it for) the run is refused before the
// program runs, naming seccomp, the filter above airlock as the cause,
// and --best-effort=...,seccomp as the way to accept it; with
// --best-effort=limits,seccomp it runs, listing seccomp as not
// enforced. A load the probe could not foresee failing is never
// degraded: the run fails closed in setup. Root and rootless alike.
func TestBestEffortNamesSeccomp(t *testing.T) {
	testutil.RequireUserNS(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the outer filters are written for amd64")
	}
	e := newCLIEnv(t)
	run := func(t *testing.T, env string, args ...string) (cliRun, nsjail.Result) {
		t.Helper()
		cmd := exec.Command(e.bin, append([]string{"run", "--json"}, args...)...)
		cmd.Dir = e.t
		cmd.Env = []string{"AIRLOCK_TEST_AS_CLI=1", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.t,
			"XDG_CACHE_HOME=" + e.cache, "TMPDIR=" + e.work, env}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := e.wait(t, cmd, &stdout, &stderr)
		var res nsjail.Result
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("exit %d, not a JSON result: %v\nstdout: %s\nstderr: %s", r.code, err, r.stdout, r.stderr)
		}
		e.left(t, r)
		return r, res
	}
	// The program says it ran, and under which seccomp mode.
	prog := []string{"sh", "-c", "echo RAN; grep '^Seccomp:' /proc/self/status"}
	refusedCall := outerSeccompEnv + "=" + strconv.Itoa(int(unix.EPERM))
	for _, c := range []struct {
		name string
		args []string
	}{
		{"best effort alone", []string{"--memory", "64MiB", "--best-effort"}},
		{"best effort limits", []string{"--memory", "64MiB", "--best-effort=limits"}},
		{"best effort network", []string{"--memory", "64MiB", "--best-effort=limits,network,landlock,namespaces"}},
		{"no best effort", nil},
	} {
		t.Run("call refused/"+c.name, func(t *testing.T) {
			_, res := run(t, refusedCall, append(append(slices.Clone(c.args), "--"), prog...)...)
			if res.Status != nsjail.StatusError || res.ExitCode != 125 || res.Error == nil || res.Error.Class != policy.ClassUnsupported || res.Error.Retryable {
				t.Fatalf("got %s, exit %d, error %+v; want a refusal (unsupported, not retryable)", res.Status, res.ExitCode, res.Error)
			}
			msg := res.Error.Message + " fix: " + res.Error.Fix
			for _, w := range []string{"seccomp", "refuses the seccomp(2) call itself", "container"} {
				if !strings.Contains(msg, w) {
					t.Errorf("the refusal does not say %q: %s", w, msg)
				}
			}
			if !regexp.MustCompile(`--best-effort=\S*seccomp`).MatchString(res.Error.Fix) {
				t.Errorf("the fix does not name --best-effort=...seccomp: %s", res.Error.Fix)
			}
			if strings.Contains(msg, "4.14") {
				t.Errorf("the refusal blames the kernel's age: %s", msg)
			}
			if strings.Contains(res.Stdout, "RAN") {
				t.Error("the program ran")
			}
		})
	}
	t.Run("call refused/best effort seccomp", func(t *testing.T) {
		_, res := run(t, refusedCall, append([]string{"--memory", "64MiB", "--best-effort=limits,seccomp", "--"}, prog...)...)
		if res.Status != nsjail.StatusOK || !strings.HasPrefix(res.Stdout, "RAN\n") || !slices.Contains(res.Enforced.NotEnforced, "seccomp") || res.Enforced.Seccomp != "none" {
			t.Fatalf("got %s, stdout %q, enforced %+v; want a run with seccomp listed as not enforced", res.Status, res.Stdout, res.Enforced)
		}
	})
	// The probe passes (the call is let through), the init's load fails:
	// best_effort never covers it, whatever it names.
	t.Run("load refused", func(t *testing.T) {
		_, res := run(t, outerFilterEnv+"="+strconv.Itoa(int(unix.EPERM)), append([]string{"--memory", "64MiB", "--best-effort=limits,seccomp", "--"}, prog...)...)
		if res.Status != nsjail.StatusSetupError || strings.Contains(res.Stdout, "RAN") || res.Error == nil || res.Error.Stage != "seccomp" {
			t.Fatalf("got %s, stdout %q, error %+v; want a setup error in stage seccomp, nothing run", res.Status, res.Stdout, res.Error)
		}
	})
}
