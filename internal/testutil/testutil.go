// Package testutil holds helpers for airlock's tests: skips that turn into
// failures in CI, and a one-call sandbox run judged from the host.
package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// RequireAllEnv, set to 1 (scripts/test does in CI), turns every skip for
// a missing host feature into a failure, so a silently skipped security
// test can never look green.
const RequireAllEnv = "AIRLOCK_TEST_REQUIRE_ALL"

// BinDirEnv names the directory of the binaries scripts/test builds apart
// from the test binaries (scripts/testlib.sh build_tests): airlock and
// airlock-init made by scripts/build (one build token), airlock-init-plain
// (cgo-free, no token: a library's InitPath) and airlock-init-other (a
// foreign token).
const BinDirEnv = "AIRLOCK_TEST_BINDIR"

// BinDir returns BinDirEnv's directory; without it t is skipped, or fails
// under RequireAllEnv.
func BinDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv(BinDirEnv)
	RequireFeature(t, "prebuilt airlock binaries ("+BinDirEnv+", set by scripts/test)", d != "")
	return d
}

// Cgroups reports whether this process can make per-run cgroups, and
// checks that the answer is the expected one for this host: as root or
// in a delegated cgroup, yes (else t fails under RequireAllEnv); rootless
// on cgroup v1, no.
func Cgroups(t testing.TB) (*cgroups.Parent, bool) {
	t.Helper()
	p, err := cgroups.Find("")
	if ExpectCgroups() {
		RequireFeature(t, "a usable cgroup (root, or a delegated one)", err == nil)
	}
	if os.Getuid() != 0 && cgroups.HostMode() != cgroups.Unified && err == nil {
		t.Fatal("rootless on a cgroup v1 host, yet cgroups.Find succeeded")
	}
	return p, err == nil
}

// Exists reports whether path exists (following symlinks).
func Exists(path string) bool { _, err := os.Stat(path); return err == nil }

// RequireFeature skips t when ok is false, or fails it under RequireAllEnv.
func RequireFeature(t testing.TB, feature string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv(RequireAllEnv) == "1" {
		t.Fatalf("host lacks %s, which this CI host is required to have (%s=1)", feature, RequireAllEnv)
	}
	t.Skipf("host lacks %s", feature)
}

// RequireBinary requires an executable on the host PATH under /usr (what
// the sandbox sees) and returns its path.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	RequireFeature(t, name+" in /usr/bin", false)
	return ""
}

// RequireUserNS requires working user namespaces for this user.
func RequireUserNS(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	RequireFeature(t, "user namespaces", err == nil && strings.TrimSpace(string(b)) != "0")
}

// RequireRoot skips unless running as real root. This is a mode, not a
// missing feature: the rootless run of the suite skips these, the root run
// executes them.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("runs only as root (the root pass of the suite covers it)")
	}
}

// Rootless reports whether the tests run as an unprivileged user.
func Rootless() bool { return os.Getuid() != 0 }

// Run runs args in a sandbox under the default policy, changed by mod,
// with output captured, and fails t if there is no trusted outcome.
func Run(t testing.TB, args []string, mod func(*policy.Policy)) *nsjail.Result {
	t.Helper()
	res, err := RunErr(t, args, mod)
	if err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	return res
}

// RunErr is Run returning the error.
func RunErr(t testing.TB, args []string, mod func(*policy.Policy)) (*nsjail.Result, error) {
	t.Helper()
	RequireUserNS(t)
	p := policy.Default()
	p.Timeout = policy.Duration(60 * time.Second)
	if mod != nil {
		mod(&p)
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := ex.Execute(ctx, executor.Request{Args: args, Policy: p})
	if res == nil {
		return nil, err
	}
	return &res.Result, err
}

// Sh runs a shell script in a sandbox and requires it to exit 0.
func Sh(t testing.TB, script string, mod func(*policy.Policy)) string {
	t.Helper()
	res := Run(t, []string{"/bin/sh", "-c", script}, mod)
	if res.Status != nsjail.StatusOK {
		t.Fatalf("script failed: status %s exit %d\nstdout: %s\nstderr: %s\nerror: %s", res.Status, res.ExitCode, res.Stdout, res.Stderr, res.Error)
	}
	return res.Stdout
}

// HostProcsWith returns the host pids whose command line contains every
// one of words as whole arguments.
func HostProcsWith(words ...string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if containsAll(args, words) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func containsAll(args, words []string) bool {
	for _, w := range words {
		found := false
		for _, a := range args {
			if a == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// WaitFor polls cond every 20ms until it is true or d passes.
func WaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// HaveBwrap reports whether bubblewrap is installed.
func HaveBwrap() bool { _, err := exec.LookPath("bwrap"); return err == nil }

// DelegatedEnv is set (to 1) where the tests run rootless inside a cgroup
// delegated to them (scripts/vm-delegated in the cgroup v2 guest).
const DelegatedEnv = "AIRLOCK_TEST_DELEGATED"

// ExpectCgroups reports whether this run must be able to make per-run
// cgroups: as root, or rootless inside a delegated cgroup.
func ExpectCgroups() bool { return os.Getuid() == 0 || os.Getenv(DelegatedEnv) == "1" }

// WorldReadableDir returns a temp dir, and makes it and its parents up
// to the temp root traversable: as root the sandbox runs as host uid
// 65534, which must reach directories bound in or made below it.
func WorldReadableDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return dir
}
