package executor_test

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// loopbackServer is an HTTP server on the host's 127.0.0.1 that counts
// the connections it accepted.
func loopbackServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("reached")) }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/", &conns
}

// Issue 24: `--backend process --net none` ran on the host's network (a
// program reached an HTTP server on the host's loopback, and the result
// said nothing). Issue 21: under Landlock network rules (ABI 4) the
// process backend's net none, and its default, deny TCP, and the result
// says so; on a kernel without them an explicit net none is refused
// before anything runs, naming the ABI, best_effort runs it and lists the
// network as not enforced, and so is the default (it is net none); the
// jail's net none does not reach the host.
func TestProcessBackendNetNone(t *testing.T) {
	py := testutil.RequireBinary(t, "python3")
	url, conns := loopbackServer(t)
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	fetch := []string{py, "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())", url}
	run := func(p policy.Policy) (*executor.Result, error) {
		return ex.Execute(t.Context(), executor.Request{Args: fetch, Policy: p})
	}

	abi := requireLandlock(t, ex, policy.LandlockNet)
	for _, net := range []policy.Net{policy.NetNone, ""} {
		res, err := run(policy.Policy{Backend: "process", Net: net})
		if err != nil || res.Status == nsjail.StatusOK || res.Enforced.Network != "landlock" || res.Enforced.Landlock != abi || slices.Contains(res.Enforced.NotEnforced, "network isolation") {
			t.Fatalf("process backend, net %q, landlock: %+v, %v; want a run that fails to connect, under landlock", net, res, err)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("under Landlock, the host's listener saw %d connections", n)
	}

	executor.SimulateLandlock(ex, 0)
	res, err := run(policy.Policy{Backend: "process", Net: policy.NetNone})
	var u *policy.UnsupportedError
	if res != nil || !errors.As(err, &u) || !errors.Is(err, executor.ErrUnsupported) || u.Control != "network isolation" || u.Fix == "" {
		t.Fatalf("process backend, net none: %+v, %v; want refused, unsupported, naming the network and a fix", res, err)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("refused, yet the host's listener saw %d connections", n)
	}

	res, err = run(policy.Policy{Backend: "process", Net: policy.NetNone, BestEffort: policy.DegradeNetwork | policy.DegradeLandlock})
	if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "reached\n" || !slices.Contains(res.Enforced.NotEnforced, "network isolation") {
		t.Fatalf("process backend, net none, best effort: %+v, %v; want a run that reached the host and lists network isolation as not enforced", res, err)
	}
	// The default net is none: refused as net none is (issue 42: nothing
	// listed without an opt-in), run by best_effort, listed.
	res, err = run(policy.Policy{Backend: "process"})
	if res != nil || !errors.As(err, &u) || u.Control != "network isolation" || u.Check != policy.CheckLandlockNet {
		t.Fatalf("process backend, default net: %+v, %v; want refused, naming the network", res, err)
	}
	res, err = run(policy.Policy{Backend: "process", BestEffort: policy.DegradeNetwork | policy.DegradeLandlock})
	if err != nil || res.Status != nsjail.StatusOK || !slices.Equal(res.Enforced.NotEnforced, []string{"network isolation", "filesystem isolation"}) {
		t.Fatalf("process backend, default net, best effort: %+v, %v; want a run listing network and filesystem isolation as not enforced", res, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("the listener saw %d connections, want the two runs'", n)
	}

	testutil.RequireUserNS(t)
	res, err = run(policy.Policy{Net: policy.NetNone})
	if err != nil || res.Status == nsjail.StatusOK || len(res.Enforced.NotEnforced) != 0 || res.Enforced.Network != "none" {
		t.Fatalf("jail, net none: %+v, %v; want a run that fails to connect", res, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("the jail's net none reached the host's listener (%d connections)", n)
	}
}

// What policy.Check accepts as enforced reaches the spec, on both
// backends: every field of a policy set away from its default shows in
// the resolved spec (policy's TestCheckFieldsByBackend is the other half:
// which fields each backend refuses).
func TestFieldsReachSpec(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	_, cgroup := testutil.Cgroups(t)
	ws, src := t.TempDir(), t.TempDir()
	t.Setenv("AIRLOCK_PASSED", "passed")
	for _, backend := range []string{"namespaces", "process"} {
		p := policy.Policy{Backend: backend, Timeout: policy.Duration(7 * time.Second), CPUTime: policy.Duration(3 * time.Second),
			Memory: 96 << 20, Pids: 17, FileSize: 5 << 20, OpenFiles: 77, MaxOutput: 999, Workspace: ws, Net: policy.NetHost,
			Setenv: map[string]string{"GIVEN": "yes"}, EnvPass: []string{"AIRLOCK_PASSED"},
			Seccomp: policy.Seccomp{Rules: []policy.SyscallRule{{Names: []string{"getppid"}, Action: policy.ActKill}}}}
		var want []string // not enforced
		if backend == "process" {
			// What Landlock cannot confine at this kernel's ABI (the
			// cgroup v2 guest's kernel has an older one than this host).
			switch abi := ex.Host().LandlockABI(); {
			case abi == 0:
				want = []string{"filesystem isolation"}
			case abi < policy.LandlockScope:
				want = []string{"unix socket isolation", "signal isolation"}
			case abi < policy.LandlockUnix:
				want = []string{"unix socket isolation"}
			}
		}
		if cgroup {
			p.CPUs = 0.5
		} else {
			// Explicit limits without a cgroup: per-process rlimits,
			// only with best_effort, and listed.
			p.BestEffort, want = policy.DegradeLimits, append(want, "memory", "pids")
		}
		if backend == "process" {
			p.BestEffort |= processDegrade(ex) // below Landlock ABI 6 (the guest): signal isolation, listed
		}
		if backend == "namespaces" {
			p.Chdir = "/srv"
			p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: src, Target: "/srv"}}
		}
		spec, notEnforced, err := ex.Resolve(executor.Request{Args: []string{"true"}, Policy: p})
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		rl := map[int]uint64{}
		for _, r := range spec.Rlimits {
			rl[r.Resource] = r.Cur
		}
		limits := spec.CgroupLimits != nil && spec.CgroupLimits.Memory == 96<<20 && spec.CgroupLimits.Pids == 17 && spec.CgroupLimits.CPUs == p.CPUs ||
			spec.CgroupLimits == nil && !cgroup && rl[unix.RLIMIT_DATA] == 96<<20 && rl[unix.RLIMIT_NPROC] == 17
		dir := "/srv"
		if backend == "process" {
			dir = ws
		}
		var mounted bool
		for _, op := range spec.Plan.Ops {
			mounted = mounted || op.Target == "/srv" && op.Source == src && op.ReadOnly
		}
		switch {
		case spec.Process != (backend == "process"), spec.Timeout != 7*time.Second, rl[unix.RLIMIT_CPU] != 3,
			rl[unix.RLIMIT_FSIZE] != 5<<20, rl[unix.RLIMIT_NOFILE] != 77, spec.OutputLimit != 999, !limits,
			!slices.Contains(spec.Env, "GIVEN=yes"), !slices.Contains(spec.Env, "AIRLOCK_PASSED=passed"),
			spec.Dir != dir, spec.Seccomp == nil, backend == "namespaces" && (!spec.HostNetwork || !mounted):
			t.Errorf("%s: spec %+v, rlimits %v, not enforced %q", backend, spec, rl, notEnforced)
		}
		if !slices.Equal(notEnforced, want) {
			t.Errorf("%s: not enforced %q", backend, notEnforced)
		}
		p.Seccomp = policy.Seccomp{Profile: "none"}
		if spec, _, err := ex.Resolve(executor.Request{Args: []string{"true"}, Policy: p}); err != nil || spec.Seccomp != nil {
			t.Errorf("%s, seccomp none: filter %v, %v", backend, spec.Seccomp, err)
		}
	}
}
