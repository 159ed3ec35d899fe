// Package testutil holds helpers for airlock's tests: skips that turn into
// failures in CI, and a one-call sandbox run judged from the host.
package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
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

// SpawnPath returns the spawn helper scripts/build made (airlock-spawn in
// BinDirEnv's directory), which is also the sandbox's reaper (pid 1, the
// program its child: nsjail.Spec.SpawnPath), or "" without BinDirEnv.
func SpawnPath() string {
	if d := os.Getenv(BinDirEnv); d != "" {
		return filepath.Join(d, "airlock-spawn")
	}
	return ""
}

// RequireReaper returns SpawnPath, or skips t without it (fails it under
// RequireAllEnv).
func RequireReaper(t testing.TB) string {
	t.Helper()
	return filepath.Join(BinDir(t), "airlock-spawn")
}

// Cgroups reports whether this process can make per-run cgroups, and
// checks that the answer is the expected one for this host: as root or
// in a delegated cgroup, yes (else t fails under RequireAllEnv); rootless
// on cgroup v1, no.
func Cgroups(t testing.TB) (*cgroups.Parent, bool) {
	t.Helper()
	p, err := cgroups.Find("", false)
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

// RequireCPUs requires that this process may run on at least n CPUs, and
// returns the set it may run on (a CI host must have them: a test of
// what a pin to one CPU changes can prove nothing on one).
func RequireCPUs(t testing.TB, n int) unix.CPUSet {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	RequireFeature(t, strconv.Itoa(n)+" CPUs this process may run on (it has "+strconv.Itoa(set.Count())+")", set.Count() >= n)
	return set
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
// with output captured, and fails t if there is no trusted outcome. With
// BinDirEnv, pid 1 is the reaper (SpawnPath).
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
	ex, err := executor.New(executor.Config{SpawnPath: SpawnPath()})
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
// one of words as whole arguments. A sandbox's reaper, whose command line
// holds its program's, is not counted: it is pid 1 of the program's pid
// namespace, and lives no longer than the program it reaps.
func HostProcsWith(words ...string) []int {
	return procsWhere(func(dir string) bool {
		b, err := os.ReadFile(dir + "/cmdline")
		args := strings.Split(string(b), "\x00")
		return err == nil && args[0] != "airlock-reaper" && containsAll(args, words)
	})
}

// procsWhere returns the pids of the host's processes, other than this
// one, whose /proc/PID directory match accepts.
func procsWhere(match func(dir string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != os.Getpid() && match("/proc/"+e.Name()) {
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

// GuestEnv is set in the cgroup v2 guest's passes (scripts/testlib.sh
// vm_boots): to 1 in the CI tier, to "full" in scripts/test --long. The
// guest is there for the cgroup version and its older kernel; in the CI
// tier a test may leave to the host passes what cannot differ there and
// costs much under emulation, saying so in its log (GuestTrim).
const GuestEnv = "AIRLOCK_TEST_GUEST"

// GuestTrim reports whether a test may leave to the host passes what
// cannot differ in the guest: in the guest's CI-tier passes (GuestEnv
// "1"), not in scripts/test --long's ("full"), which run everything.
func GuestTrim() bool { return os.Getenv(GuestEnv) == "1" }

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

// CountFDs is the number of fds this process has open.
func CountFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Left says what CheckNothingLeft looks for.
type Left struct {
	// Work is a directory private to the runs (their Config.WorkDir or
	// TMPDIR): it must be left empty. "" = not checked.
	Work string
	// FDs is CountFDs before the runs: this process must not hold more
	// once its goroutines have closed their pipes. 0 = not checked.
	FDs int
	// Supervisors are the pids whose cgroups (airlock-PID-*) must be gone,
	// looked for in every hierarchy of this process's own cgroup (beside
	// a v2 supervisor leaf too) and in CgroupDirs. nil = this process.
	Supervisors []int
	CgroupDirs  []string
	// Binary, if set, is an executable no process but this one may run
	// (a CLI, or an init re-executing it, that outlived its run).
	Binary string
}

// CheckNothingLeft checks that the sandboxes run so far left nothing on
// the host once whatever ran them was closed: no child process of this
// one, nor any process of l.Binary, no workspace, no cgroup, no fd (see
// Left).
func CheckNothingLeft(t testing.TB, l Left) {
	t.Helper()
	procs := func() []int {
		pids := Children()
		if l.Binary != "" {
			pids = append(pids, ProcsOf(l.Binary)...)
		}
		return pids
	}
	if !WaitFor(5*time.Second, func() bool { return len(procs()) == 0 }) {
		t.Errorf("processes left: %v", procs())
	}
	if l.Work != "" {
		if left, _ := os.ReadDir(l.Work); len(left) != 0 {
			t.Errorf("left in %s: %v", l.Work, left)
		}
	}
	if left := CgroupsOf(l.Supervisors, l.CgroupDirs...); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if l.FDs > 0 && !WaitFor(2*time.Second, func() bool { return CountFDs(t) <= l.FDs }) {
		t.Errorf("fds: %d before, %d after", l.FDs, CountFDs(t))
	}
}

// CgroupsOf returns the run cgroups of supervisors (nil = this process)
// that exist: airlock-PID-* in every hierarchy of this process's own
// cgroup, beside a v2 supervisor leaf, and in dirs.
func CgroupsOf(supervisors []int, dirs ...string) []string {
	if supervisors == nil {
		supervisors = []int{os.Getpid()}
	}
	dirs = slices.Clone(dirs)
	own, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, rel := range []string{f[2], filepath.Dir(f[2])} {
			m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", rel))
			dirs = append(append(dirs, filepath.Join("/sys/fs/cgroup", rel)), m...)
		}
	}
	var left []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, pid := range supervisors {
			m, _ := filepath.Glob(filepath.Join(d, "airlock-"+strconv.Itoa(pid)+"-*"))
			for _, p := range m {
				if !slices.Contains(left, p) {
					left = append(left, p)
				}
			}
		}
	}
	return left
}

// ProcsOf returns the pids of processes, other than this one, running
// the executable bin.
func ProcsOf(bin string) []int {
	return procsWhere(func(dir string) bool {
		exe, err := os.Readlink(dir + "/exe")
		return err == nil && strings.TrimSuffix(exe, " (deleted)") == bin
	})
}

// Children returns the pids of this process's child processes.
func Children() []int {
	self := strconv.Itoa(os.Getpid())
	return procsWhere(func(dir string) bool {
		b, err := os.ReadFile(dir + "/stat")
		if err != nil {
			return false
		}
		// The comm field may hold spaces and parens: the ppid is the
		// second field after its closing paren.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		return len(f) > 1 && f[1] == self
	})
}

// KernelLandlockABI is the Landlock ABI the kernel itself reports
// (landlock_create_ruleset's version query), 0 without Landlock: the
// ground truth the host probe's answer is checked against.
func KernelLandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// RequireLandlock requires Landlock ABI min, which the host probe found
// as abi. Whether the host has it is the kernel's own answer: a kernel
// older than min skips the test, also under RequireAllEnv (the cgroup v2
// guest boots an older kernel than the CI host's), and a kernel that has
// it fails the test when the probe missed it.
func RequireLandlock(t testing.TB, abi, min int) {
	t.Helper()
	kernel := KernelLandlockABI()
	if kernel < min {
		t.Skipf("this kernel has Landlock ABI %d, not %d", kernel, min)
	}
	if abi < min {
		t.Fatalf("the host probe finds Landlock ABI %d where the kernel answers %d: ABI %d missed", abi, kernel, min)
	}
}

// MedianMS is the median of d in milliseconds (d is sorted in place), for
// benchmarks' ReportMetric.
func MedianMS(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[len(d)/2]) / 1e6
}
