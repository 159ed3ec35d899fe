package executor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// initChildren returns the pids of sandbox inits this process started
// (prepared or running), by parent pid and argv[0].
func initChildren() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		// A prepared sandbox's pid 1: the init, or the waiting reaper it
		// execs (this test binary's own, embedded).
		if cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); strings.HasPrefix(string(cmd), "airlock-init\x00") || strings.HasPrefix(string(cmd), "airlock-reaper\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The warm pool: requests run in prepared sandboxes, confined exactly as
// a cold run is, each sandbox used once, timeouts counted from the
// request; other policies run cold; Close leaves nothing behind.
func TestWarmPool(t *testing.T) {
	testutil.RequireUserNS(t)
	work := testutil.WorldReadableDir(t)
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	ex, err := executor.New(executor.Config{WorkDir: work, Pool: executor.PoolConfig{Size: 2, Policy: pol}})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	fds := countFDs(t)
	waitReady := func() {
		t.Helper()
		if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 2 }) {
			t.Fatalf("pool never filled: %+v", ex.PoolStats())
		}
	}
	waitReady()
	if n := len(initChildren()); n != 2 {
		t.Errorf("%d prepared inits, want 2", n)
	}

	// Confined as a cold run is: same enforcement record, same state.
	script := `grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd|CapPrm):' /proc/self/status; [ $$ -gt 1 ] && echo reaper-child; echo left > /tmp/left; cat`
	warm, err := ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", script}, Policy: pol, Stdin: strings.NewReader("from stdin")})
	if err != nil || warm.Status != nsjail.StatusOK {
		t.Fatalf("warm run: %v %+v", err, warm)
	}
	if st := ex.PoolStats(); st.Warm != 1 {
		t.Fatalf("the run did not use the pool: %+v", st)
	}
	// Not pid 1: the reaper's child (its pid depends on how many threads
	// the init had).
	want := "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nreaper-child\nfrom stdin"
	if !strings.Contains(warm.Stdout, "from stdin") || normalize(warm.Stdout) != normalize(want) {
		t.Errorf("warm run output:\n%s\nwant:\n%s", warm.Stdout, want)
	}
	cold, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	coldRes, err := cold.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", script}, Policy: pol, Stdin: strings.NewReader("from stdin")})
	if err != nil {
		t.Fatal(err)
	}
	if warm.Stdout != coldRes.Stdout || !reflect.DeepEqual(warm.Enforced, coldRes.Enforced) {
		t.Errorf("warm and cold differ:\nwarm %q %s\ncold %q %s", warm.Stdout, js(warm.Enforced), coldRes.Stdout, js(coldRes.Enforced))
	}

	// Never reused: the next request finds nothing of the first.
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", `test ! -e /tmp/left && test -z "$(ls -A /workspace)" && echo fresh`}, Policy: pol})
	if err != nil || res.Stdout != "fresh\n" {
		t.Errorf("second warm run: %v %+v", err, res)
	}

	// Code, input and files out, warm.
	waitReady()
	res, err = ex.Execute(t.Context(), executor.Request{Language: "sh", Code: `cat "$AIRLOCK_INPUT"; echo out > result.txt`,
		Input: json.RawMessage(`{"a":1}`), CollectFiles: true, Policy: pol})
	if err != nil || res.Stdout != `{"a":1}` || len(res.Files) != 1 || res.Files[0].Path != "result.txt" || string(res.Files[0].Data) != "out\n" {
		t.Errorf("language run: %v %+v", err, res)
	}

	// The timeout counts from the request, not from the preparation: the
	// prepared sandboxes have waited longer than the timeout. 6 s, not
	// 3: the program must print before it, in the loaded emulated guest
	// too.
	waitReady()
	time.Sleep(7 * time.Second)
	short := pol
	short.Timeout = policy.Duration(6 * time.Second)
	res, err = ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", "sleep 1; echo done"}, Policy: short})
	if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "done\n" {
		t.Errorf("run after the pool idled: %v %+v", err, res)
	}
	short.Timeout = policy.Duration(time.Second)
	res, err = ex.Execute(t.Context(), executor.Request{Args: []string{"sleep", "30"}, Policy: short})
	if err != nil || res.Status != nsjail.StatusTimeout {
		t.Errorf("timeout in a prepared sandbox: %v %+v", err, res)
	}
	warmRuns := ex.PoolStats().Warm
	if warmRuns != 5 {
		t.Errorf("%d warm runs, want 5: %+v", warmRuns, ex.PoolStats())
	}

	// Another jail (here: more memory) runs cold, correctly.
	other := pol
	other.Memory = 2 * policy.DefaultMemory
	if !testutil.ExpectCgroups() {
		other.BestEffort = policy.DegradeLimits
	}
	res, err = ex.Execute(t.Context(), executor.Request{Args: []string{"echo", "cold"}, Policy: other})
	if err != nil || res.Stdout != "cold\n" || ex.PoolStats().Warm != warmRuns {
		t.Errorf("other policy: %v %+v %+v", err, res, ex.PoolStats())
	}

	// Close leaves nothing: no init, workspace, cgroup or fd.
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	cold.Close()
	if left := initChildren(); len(left) != 0 {
		t.Errorf("inits left after Close: %v", left)
	}
	checkNothingLeft(t, ex, work, fds)
	if _, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: pol}); err == nil {
		t.Error("a closed executor ran a request")
	}
}

// A pool whose policy the host cannot enforce is refused at New.
func TestWarmPoolFailsClosed(t *testing.T) {
	testutil.RequireUserNS(t)
	pol := policy.Default()
	pol.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: "/no/such/dir", Target: "/x"}}
	if _, err := executor.New(executor.Config{Pool: executor.PoolConfig{Size: 1, Policy: pol}}); err == nil {
		t.Fatal("a pool with an impossible policy was accepted")
	}
}

// A pooled policy whose filter denies a syscall the init still makes
// after confining itself ahead (here chdir, into the working directory)
// loads the filter when the request arrives: the request runs warm, and
// the filter is in force for the program.
func TestWarmPoolLateFilter(t *testing.T) {
	testutil.RequireUserNS(t)
	testutil.RequireBinary(t, "python3")
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	pol.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"chdir"}, Action: policy.ActErrno, Errno: int(unix.EPERM)}}
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), Pool: executor.PoolConfig{Size: 1, Policy: pol}})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 1 }) {
		t.Fatalf("pool never filled: %+v", ex.PoolStats())
	}
	script := "import os\nprint(open('/proc/self/status').read().count('Seccomp:\\t2'))\ntry:\n os.chdir('/tmp')\nexcept OSError as e:\n print(e.errno)"
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"python3", "-I", "-S", "-c", script}, Policy: pol})
	if err != nil || res.Status != nsjail.StatusOK {
		t.Fatalf("warm run: %v %+v", err, res)
	}
	if st := ex.PoolStats(); st.Warm != 1 {
		t.Errorf("the run did not use the pool: %+v", st)
	}
	if want := fmt.Sprintf("1\n%d\n", unix.EPERM); res.Stdout != want {
		t.Errorf("the program's filter: stdout %q stderr %q, want %q (filter in force, chdir EPERM)", res.Stdout, res.Stderr, want)
	}
}

// With a reaper, a pool of the default profile starts it ahead: pid 1 is
// the waiting reaper (its command line), and the run is warm. A pool
// whose filter names a call the waiting reaper makes (chdir, denied)
// starts it with the request, and that filter still holds for the
// program. A program the waiting reaper cannot take (a NUL in an
// argument) runs cold, with the cold path's outcome.
func TestWarmPoolWaitingReaper(t *testing.T) {
	testutil.RequireUserNS(t)
	spawn := testutil.RequireReaper(t)
	denyChdir := policy.Default()
	denyChdir.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"chdir"}, Action: policy.ActErrno, Errno: int(unix.EPERM)}}
	pid1 := `tr '\0' '\n' </proc/1/cmdline | sed '2s/,.*//' | tr '\n' ' ' | head -c 20; if cd /tmp 2>/dev/null; then echo " cd"; else echo " no cd"; fi`
	for _, c := range []struct {
		name string
		pol  policy.Policy
		want string
	}{
		{"default", policy.Default(), "airlock-reaper 0 4 w cd\n"},
		{"chdir denied", denyChdir, "airlock-reaper 0 4 0 no cd\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), SpawnPath: spawn, Pool: executor.PoolConfig{Size: 1, Policy: c.pol}})
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			full := func() {
				if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 1 }) {
					t.Fatalf("pool never filled: %+v", ex.PoolStats())
				}
			}
			full()
			res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", pid1}, Policy: c.pol})
			if err != nil || res.Status != nsjail.StatusOK {
				t.Fatalf("%v %+v", err, res)
			}
			if res.Stdout != c.want || ex.PoolStats().Warm != 1 {
				t.Errorf("pid 1 and cd: %q, want %q; %+v", res.Stdout, c.want, ex.PoolStats())
			}
			full()
			nul := executor.Request{Args: []string{"/bin/echo", "a\x00b"}, Policy: c.pol}
			_, warmErr := ex.Execute(t.Context(), nul)
			cold, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t), SpawnPath: spawn})
			if err != nil {
				t.Fatal(err)
			}
			defer cold.Close()
			_, coldErr := cold.Execute(t.Context(), nul)
			if warmErr == nil || coldErr == nil || warmErr.Error() != coldErr.Error() {
				t.Errorf("a NUL in an argument: pooled %v, cold %v", warmErr, coldErr)
			}
			if st := ex.PoolStats(); c.name == "default" && (st.Warm != 1 || st.Cold != 1) {
				t.Errorf("the waiting reaper took a NUL argument, or the pool lost count: %+v", st)
			}
		})
	}
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// A pool with Reuse serves up to that many requests with one sandbox,
// each finding /tmp, /workspace and the process table as a fresh one
// would, and prepares a new sandbox after the last or after a request
// that was killed. Without a per-run cgroup (rootless on cgroup v1) it
// does not recycle: every request gets a sandbox of its own.
func TestWarmPoolReuse(t *testing.T) {
	testutil.RequireUserNS(t)
	spawn := testutil.RequireReaper(t)
	parent, recycles := testutil.Cgroups(t)
	if recycles {
		// Recycling needs a memory peak the kernel can reset (cgroup v1,
		// or v2 on Linux 6.12 or later); without, a sandbox a request.
		g, err := parent.New(cgroups.Limits{Memory: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		recycles = g.ResetPeak() == nil
		g.Delete()
	}
	work := testutil.WorldReadableDir(t)
	ex, err := executor.New(executor.Config{WorkDir: work, SpawnPath: spawn, Pool: executor.PoolConfig{Size: 1, Policy: policy.Default(), Reuse: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	full := func() {
		t.Helper()
		if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 1 }) {
			t.Fatalf("pool never filled: %+v", ex.PoolStats())
		}
	}
	mode := "w"
	if recycles {
		mode = "r"
	}
	script := `tr '\0' '\n' </proc/1/cmdline | sed '2s/,.*//' | tr '\n' ' ' | head -c 20; echo; ls -A /tmp /workspace; set -- /proc/[0-9]*; echo $#
		touch /tmp/x /workspace/y; mkdir /workspace/d; chmod 0 /workspace; setsid sleep 100 </dev/null >/dev/null 2>&1 &`
	want := "airlock-reaper 0 4 " + mode + "\n/tmp:\n\n/workspace:\n2\n"
	for i := range 4 {
		full()
		res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", script}, Policy: policy.Default()})
		if err != nil || res.Status != nsjail.StatusOK || res.Stdout != want {
			t.Fatalf("request %d: %v %q, want %q (%+v)", i, err, res.Stdout, want, res)
		}
		// The run's place in its sandbox: 1, 2, 3, then a new one's 1.
		if wantRun := []int{1, 2, 3, 1}[i]; recycles && res.Enforced.SandboxRun != wantRun || !recycles && res.Enforced.SandboxRun != 0 {
			t.Fatalf("request %d: enforced.sandbox_run %d", i, res.Enforced.SandboxRun)
		}
	}
	st := ex.PoolStats()
	wantReused := int64(0)
	if recycles {
		wantReused = 2 // the second and third requests; the fourth has a new sandbox
	}
	if st.Warm != 4 || st.Cold != 0 || st.Reused != wantReused {
		t.Fatalf("pool stats %+v, want 4 warm, %d reused", st, wantReused)
	}
	// A killed request ends its sandbox: the next has a new one.
	full()
	timeout := policy.Default()
	timeout.Timeout = policy.Duration(300 * time.Millisecond)
	if res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"sleep", "10"}, Policy: timeout}); err != nil || res.Status != nsjail.StatusTimeout {
		t.Fatalf("timeout: %v %+v", err, res)
	}
	full()
	before := ex.PoolStats().Reused
	if res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", script}, Policy: policy.Default()}); err != nil || res.Stdout != want {
		t.Fatalf("after a timeout: %v %+v", err, res)
	}
	if st := ex.PoolStats(); st.Reused != before {
		t.Fatalf("a killed request's sandbox was reused: %+v", st)
	}
	// A workspace its request left with attributes or inode flags of its
	// own is not handed on: the next request has a new sandbox.
	marks := []string{
		`python3 -c 'import os; os.setxattr("/workspace", "user.mark", b"1")'`,
		`python3 -c 'import array, fcntl, os
fd = os.open("/workspace", os.O_RDONLY); a = array.array("i", [0])
fcntl.ioctl(fd, 0x80086601, a); a[0] |= 0x80; fcntl.ioctl(fd, 0x40086602, a)'`,
	}
	if !recycles {
		marks = nil
	}
	for _, mark := range marks {
		full()
		if res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", mark}, Policy: policy.Default()}); err != nil || res.Status != nsjail.StatusOK {
			t.Fatalf("%s: %v %+v", mark, err, res)
		}
		before := ex.PoolStats().Reused
		full()
		if res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", script}, Policy: policy.Default()}); err != nil || res.Stdout != want {
			t.Fatalf("after %s: %v %+v", mark, err, res)
		}
		if st := ex.PoolStats(); st.Reused != before {
			t.Fatalf("the workspace of %s was handed on: %+v", mark, st)
		}
	}
	// Nothing is left, workspaces whose program took their modes away
	// included (rootless, the supervisor has no CAP_DAC_OVERRIDE).
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	if left, err := os.ReadDir(work); err != nil || len(left) != 0 {
		t.Fatalf("left in the work dir: %v %v", left, err)
	}
}
