package nsjail_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// recycler prepares recycled sandboxes (Spec.Recycle) with the default
// policy in a fresh cgroup each, and runs shell scripts in them.
type recycler struct {
	t       *testing.T
	resolve func(args []string, p policy.Policy) nsjail.Spec
	parent  *cgroups.Parent
	// resettable: this kernel can reset a group's memory peak (v1, or v2
	// on Linux 6.12 or later), which recycling needs.
	resettable bool
}

func newRecycler(t *testing.T) *recycler {
	resolve := reaperResolver(t)
	parent, ok := testutil.Cgroups(t)
	if !ok {
		t.Skip("no per-run cgroups here (rootless on cgroup v1): a recycled sandbox needs one")
	}
	r := &recycler{t: t, resolve: resolve, parent: parent}
	g, err := parent.New(*r.spec("true", nil).CgroupLimits)
	if err != nil {
		t.Fatal(err)
	}
	r.resettable = g.ResetPeak() == nil
	g.Delete()
	return r
}

func (r *recycler) spec(script string, mod func(*policy.Policy)) nsjail.Spec {
	p := policy.Default()
	if mod != nil {
		mod(&p)
	}
	return r.resolve([]string{"/bin/sh", "-c", script}, p)
}

// prepare returns a recycling prepared sandbox and its cgroup's spec,
// with the default policy changed by mod (the runs' must match it).
func (r *recycler) prepare(mod ...func(*policy.Policy)) (*nsjail.Prepared, cgroups.Group) {
	t := r.t
	var m func(*policy.Policy)
	if len(mod) > 0 {
		m = mod[0]
	}
	spec := r.spec("true", m)
	g, err := r.parent.New(*spec.CgroupLimits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Delete() })
	spec.Cgroup, spec.ReaperWaits, spec.Recycle = g, true, true
	p, err := nsjail.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if p.Recycles() != r.resettable {
		t.Fatalf("recycles %v, but the memory peak resets: %v", p.Recycles(), r.resettable)
	}
	return p, g
}

func (r *recycler) run(p *nsjail.Prepared, g cgroups.Group, script string, mod func(*policy.Policy)) *nsjail.Result {
	r.t.Helper()
	spec := r.spec(script, mod)
	spec.Cgroup = g
	res, err := p.Run(r.t.Context(), spec)
	if err != nil {
		r.t.Fatalf("%q: %v", script, err)
	}
	return res
}

// A recycled sandbox's next run finds it as a fresh one: no process,
// file, queue or mode the last run left, the cgroup's usage counted from
// its own start; and a run that leaves what the reaper cannot reset, or
// that the supervisor kills, ends the sandbox. Judged from the results
// (what the next run sees) and from Reusable.
func TestRecycledSandbox(t *testing.T) {
	r := newRecycler(t)
	p, g := r.prepare()
	pid := p.Pid()
	if !r.resettable {
		// Fail closed: a group whose peak cannot be reset (cgroup v2
		// before Linux 6.12) serves one run, as without Recycle.
		if res := r.run(p, g, "echo one", nil); res.Stdout != "one\n" || p.Reusable() {
			t.Fatalf("without a peak reset: %+v, reusable %v", res, p.Reusable())
		}
		spec := r.spec("true", nil)
		spec.Cgroup = g
		if _, err := p.Run(t.Context(), spec); err == nil {
			t.Fatal("a sandbox that cannot recycle ran a second program")
		}
		return
	}

	// A messy run: files, an unwritable tree, a queue, a shm file, a
	// background process in a session of its own, a big tmpfs file, a
	// mode change, CPU burnt; output and exit code of its own.
	res := r.run(p, g, `
		echo one; echo err >&2
		mkdir -p /tmp/d/e/f && touch /tmp/d/e/f/x /tmp/.hidden && chmod 0 /tmp/d/e /tmp/d
		echo q > /dev/shm/seg
		python3 -c 'import ctypes, os; ctypes.CDLL("librt.so.1").mq_open(b"/q", os.O_CREAT | os.O_RDWR, 0o600, None)'
		test -e /dev/mqueue/q || echo no queue
		head -c 64000000 /dev/zero > /tmp/big
		chmod 700 /tmp
		setsid sleep 1000 </dev/null >/dev/null 2>&1 &
		dd if=/dev/zero of=/dev/null bs=4k count=400000 2>/dev/null
		exit 3`, nil)
	if res.Status != nsjail.StatusExited || res.ExitCode != 3 || res.Stdout != "one\n" || res.Stderr != "err\n" {
		t.Fatalf("first run: %+v", res)
	}
	if res.MemoryPeakBytes < 60<<20 || res.CPUTimeMS < 20 {
		t.Fatalf("first run's usage: peak %d, cpu %d ms", res.MemoryPeakBytes, res.CPUTimeMS)
	}
	firstCPU := res.CPUTimeMS
	if !p.Reusable() {
		t.Fatal("a run that exited on its own left the sandbox unusable")
	}
	// The next run: same pid 1, nothing left.
	res = r.run(p, g, `
		ls -A /tmp /dev/shm /dev/mqueue /workspace
		stat -c %a /tmp /dev/shm
		set -- /proc/[0-9]*; echo $# processes`, nil) // pid 1 and this shell
	want := "/dev/mqueue:\n\n/dev/shm:\n\n/tmp:\n\n/workspace:\n1777\n1777\n2 processes\n"
	if res.Status != nsjail.StatusOK || res.Stdout != want {
		t.Fatalf("second run saw what the first left:\n%q\nwant\n%q\n(%+v)", res.Stdout, want, res)
	}
	// Its own CPU is a shell's, ls's and stat's: 23 ms on a loaded PVM
	// guest (run39); counting the first run's would include dd's.
	if res.MemoryPeakBytes >= 32<<20 || res.CPUTimeMS >= max(20, firstCPU/2) {
		t.Fatalf("second run's usage counts the first's: peak %d, cpu %d ms (the first's %d)", res.MemoryPeakBytes, res.CPUTimeMS, firstCPU)
	}
	if p.Pid() != pid || p.Runs() != 2 || res.Enforced.SandboxRun != 2 {
		t.Fatalf("pid 1 %d (was %d), runs %d, enforced.sandbox_run %d", p.Pid(), pid, p.Runs(), res.Enforced.SandboxRun)
	}
	// stdin, env and a signal of its own: the run's.
	spec := r.spec(`read l; echo "$l $FOO"; kill -SEGV $$`, nil)
	spec.Cgroup, spec.Stdin, spec.Env = g, strings.NewReader("in\n"), append(spec.Env, "FOO=bar")
	res, err := p.Run(t.Context(), spec)
	if err != nil || res.Status != nsjail.StatusSignaled || res.Signal != "SIGSEGV" || res.Stdout != "in bar\n" {
		t.Fatalf("third run: %v %+v", err, res)
	}
	if !p.Reusable() {
		t.Fatal("a program's own signal ended the sandbox")
	}
	// A start that fails before the exec ran nothing: the same error as
	// a cold start's, and the sandbox serves on.
	for _, c := range []struct {
		name string
		mod  func(*nsjail.Spec)
	}{
		{"not found", func(s *nsjail.Spec) { s.Args = []string{"no-such-program"} }},
		{"no such dir", func(s *nsjail.Spec) { s.Dir = "/no/such/dir" }},
	} {
		spec := r.spec("true", nil)
		spec.Cgroup = g
		c.mod(&spec)
		_, err := p.Run(t.Context(), spec)
		cold := r.spec("true", nil)
		c.mod(&cold)
		_, coldErr := nsjail.Run(t.Context(), cold)
		if err == nil || coldErr == nil || err.Error() != coldErr.Error() {
			t.Fatalf("%s: recycled %v, cold %v", c.name, err, coldErr)
		}
		if !p.Reusable() {
			t.Fatalf("%s: a start that failed before the exec ended the sandbox", c.name)
		}
	}
	// pid 1 is not dumpable: its /proc files are not the program's to
	// write (the reaper checks oom_score_adj all the same).
	if res := r.run(p, g, `echo 500 > /proc/1/oom_score_adj`, nil); res.Status != nsjail.StatusExited || !p.Reusable() {
		t.Fatalf("a write to pid 1's oom_score_adj: %+v", res)
	}

	// What ends it. Each case's own result is still the run's. (jail:
	// the sandbox is prepared with that policy too.)
	memory := func(p *policy.Policy) { p.Memory = 64 << 20 }
	cases := []struct {
		name, script string
		mod          func(*policy.Policy)
		status       nsjail.Status
		jail         bool
	}{
		{"sysv-shm", `ipcmk -M 4096 >/dev/null`, nil, nsjail.StatusOK, false},
		{"pid1-rlimit", `prlimit --pid 1 --nofile=64:64`, nil, nsjail.StatusOK, false},
		{"pid1-nice", `renice -n 5 -p 1 >/dev/null`, nil, nsjail.StatusOK, false},
		{"pid1-ioprio", `ionice -c 3 -p 1`, nil, nsjail.StatusOK, false},
		{"pid1-scheduler", `chrt -i -p 0 1`, nil, nsjail.StatusOK, false},
		{"xattr-on-tmp", `setfattr -n user.x -v 1 /tmp 2>/dev/null || python3 -c 'import os; os.setxattr("/tmp", "user.x", b"1")'`, nil, nsjail.StatusOK, false},
		{"inode-flags-on-tmp", `python3 -c 'import array, fcntl, os
fd = os.open("/tmp", os.O_RDONLY); a = array.array("i", [0])
fcntl.ioctl(fd, 0x80086601, a); a[0] |= 0x80; fcntl.ioctl(fd, 0x40086602, a)'`, nil, nsjail.StatusOK, false},
		{"timeout", `sleep 10`, func(p *policy.Policy) { p.Timeout = policy.Duration(200 * time.Millisecond) }, nsjail.StatusTimeout, false},
		{"cpu-time", `while :; do :; done`, func(p *policy.Policy) { p.CPUTime = policy.Duration(300 * time.Millisecond) }, nsjail.StatusCPULimit, false},
		{"output", `head -c 100000 /dev/zero`, func(p *policy.Policy) { p.MaxOutput = 1000 }, nsjail.StatusOutputLimit, false},
		// Past the cap in what the program left in the pipe as it ended:
		// found after its end, still its result's cause.
		{"output-at-exit", `head -c 5000 /dev/zero`, func(p *policy.Policy) { p.MaxOutput = 1000 }, nsjail.StatusOutputLimit, false},
		{"oom", `python3 -c 'b = bytearray(256 << 20)'`, memory, nsjail.StatusMemoryLimit, true},
		{"kill-rule", `mkdir /tmp/x`, func(p *policy.Policy) {
			p.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"mkdir", "mkdirat"}, Action: policy.ActKill}}
		}, nsjail.StatusSeccompViolation, true},
	}
	if runtime.NumCPU() > 1 {
		cases = append(cases, struct {
			name, script string
			mod          func(*policy.Policy)
			status       nsjail.Status
			jail         bool
		}{"pid1-affinity", `taskset -p -c 0 1 >/dev/null`, nil, nsjail.StatusOK, false})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p *nsjail.Prepared
			var g cgroups.Group
			if c.jail {
				p, g = r.prepare(c.mod)
			} else {
				p, g = r.prepare()
			}
			jail := func(pol *policy.Policy) {
				if c.jail {
					c.mod(pol)
				}
			}
			if res := r.run(p, g, "true", jail); res.Status != nsjail.StatusOK || !p.Reusable() {
				t.Fatalf("a plain run: %+v", res)
			}
			res := r.run(p, g, c.script, c.mod)
			if res.Status != c.status {
				t.Fatalf("status %s, want %s (%+v)", res.Status, c.status, res)
			}
			if p.Reusable() {
				t.Fatal("the sandbox is reusable after this run")
			}
			spec := r.spec("true", jail)
			spec.Cgroup = g
			if _, err := p.Run(t.Context(), spec); err == nil {
				t.Fatal("a discarded sandbox ran another program")
			}
		})
	}
}
