package executor_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// The process backend (seed 004): the program runs on the host in its
// workspace, in a session of its own, as an unprivileged uid, with only
// the allowed environment, no_new_privs and seccomp; the timeout kills
// its process group; the result says which backend ran.
func TestProcessBackend(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	t.Setenv("AIRLOCK_CANARY_SECRET", "s3cr3t")
	ex, _ := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	defer ex.Close()
	p := policy.Policy{Backend: "process", Net: processNet(ex), BestEffort: processDegrade(ex), Setenv: map[string]string{"GIVEN": "yes"}}
	code := `import os, sys, json
print(json.load(open(os.environ["AIRLOCK_INPUT"]))["n"], sys.argv[1], input(), os.getcwd() == os.environ["HOME"])
print(sorted(k for k in os.environ if k not in ("PWD", "LC_CTYPE")))
st = dict(l.split(":\t") for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print(os.getuid() != 0, st["NoNewPrivs"], st["Seccomp"], st["CapEff"], os.getsid(0) == os.getpid())`
	res, err := ex.Execute(t.Context(), executor.Request{Language: "python", Code: code, Argv: []string{"arg"}, Input: []byte(`{"n": 7}`),
		Stdin: strings.NewReader("line\n"), Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	want := "7 arg line True\n['AIRLOCK_INPUT', 'GIVEN', 'HOME', 'LANG', 'PATH']\nTrue 1 2 0000000000000000 True\n"
	if ex.Host().LandlockABI() > 0 {
		// Temporary files go to the workspace, the one writable place.
		want = strings.Replace(want, "'PATH'", "'PATH', 'TMPDIR'", 1)
	}
	if res.Status != nsjail.StatusOK || res.Stdout != want || res.Enforced.Backend != "process" || len(res.Enforced.Namespaces) != 0 {
		t.Fatalf("status %s backend %s\nstdout %q\nwant   %q\nstderr %q", res.Status, res.Enforced.Backend, res.Stdout, want, res.Stderr)
	}
	m := "765432"
	res, err = ex.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", "(sleep " + m + " &); exec sleep " + m},
		Policy: policy.Policy{Backend: "process", Net: processNet(ex), BestEffort: processDegrade(ex), Timeout: policy.Duration(time.Second)}})
	if err != nil || res.Status != nsjail.StatusTimeout {
		t.Fatalf("timeout: %v %+v", err, res)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return len(testutil.HostProcsWith("sleep", m)) == 0 }) {
		t.Fatalf("the process group outlived the timeout: %v", testutil.HostProcsWith("sleep", m))
	}
}

// processNet is the net of a process backend policy ex runs whatever
// the kernel: the default (none), or the host's where the kernel has no
// Landlock TCP rules, without which net none is refused (the cgroup v2
// guest's 6.1).
// processDegrade is what a process backend test that is not about
// Landlock accepts degrading on a kernel without its scopes (ABI 6; the
// cgroup v2 guest's 6.1 has ABI 2): the signal isolation then listed.
func processDegrade(ex *executor.Executor) policy.Degrade {
	if ex.Host().LandlockABI() < policy.LandlockScope {
		return policy.DegradeLandlock
	}
	return 0
}

func processNet(ex *executor.Executor) policy.Net {
	if ex.Host().LandlockABI() < policy.LandlockNet {
		return policy.NetHost
	}
	return ""
}

// The process backend runs only when chosen, or as the fallback of a
// best_effort policy where the jail cannot run; otherwise that host
// refuses the namespaces, naming the missing check (user namespaces).
func TestProcessBackendOnlyByChoice(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, _ := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	defer ex.Close()
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}})
	if err != nil || res.Enforced.Backend != "namespaces" {
		t.Fatalf("default backend: %v %+v", err, res)
	}
	executor.SimulateNoNamespaces(ex, &policy.UnsupportedError{Control: "user namespaces", Reason: "simulated", Fix: "enable them"})
	_, err = ex.Execute(t.Context(), executor.Request{Args: []string{"true"}})
	var u *policy.UnsupportedError
	if !errors.As(err, &u) || u.Control != "namespaces" || u.Check != policy.CheckUserNS || !strings.Contains(u.Error(), "enable them") {
		t.Fatalf("no namespaces, no best effort: %v", err)
	}
	fallback := policy.DegradeNamespaces | processDegrade(ex)
	if processNet(ex) == policy.NetHost {
		fallback |= policy.DegradeNetwork // no Landlock TCP rules (the cgroup v2 guest)
	}
	res, err = ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: policy.Policy{BestEffort: fallback}})
	if err != nil || res.Status != nsjail.StatusOK || res.Enforced.Backend != "process" || !slices.Contains(res.Enforced.NotEnforced, "namespaces") {
		t.Fatalf("best effort fallback: %v %+v", err, res)
	}
	if c := ex.Capabilities(); c.Namespaces || c.Filesystem || c.Backend != "process" || c.NamespacesNote == "" {
		t.Errorf("capabilities without namespaces: %+v", c)
	}
	if _, err := ex.Execute(t.Context(), executor.Request{Args: []string{"true"}, Policy: policy.Policy{Backend: "process",
		Mounts: []policy.Mount{{Type: policy.MountTmpfs, Target: "/x"}}, BestEffort: policy.DegradeNamespaces | policy.DegradeLandlock | policy.DegradeNetwork}}); !errors.Is(err, executor.ErrUnsupported) {
		t.Errorf("mounts on the process backend, even best_effort: %v", err)
	}
}
