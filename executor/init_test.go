package executor_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// A separately built, cgo-free init (cmd/airlock-init as Config.InitPath)
// builds the same sandbox as the default one: the default policy's jail
// and filter in force, a kill rule named through the listener it passes
// back, a warm pool's prepared sandboxes; and an init built with another
// build token refuses to start any program. All of it forked by the
// supervisor, and started by the spawn helper (Config.SpawnPath).
func TestSeparateInit(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	spawn := filepath.Join(bin, "airlock-spawn")
	testutil.RequireFeature(t, "the spawn helper built beside airlock (scripts/build, gcc)", testutil.Exists(spawn))
	t.Run("fork", func(t *testing.T) { separateInit(t, bin, "") })
	t.Run("spawn", func(t *testing.T) { separateInit(t, bin, spawn) })
}

func separateInit(t *testing.T, bin, spawn string) {
	work := testutil.WorldReadableDir(t)
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	ex, err := executor.New(executor.Config{WorkDir: work, InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: spawn,
		Pool: executor.PoolConfig{Size: 1, Policy: pol}})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	run := func(req executor.Request) *executor.Result {
		t.Helper()
		res, err := ex.Execute(t.Context(), req)
		if err != nil {
			t.Fatalf("%v %+v", err, res)
		}
		return res
	}
	// The pool's sandbox first (prepared by the separate init), then cold.
	if !testutil.WaitFor(time.Minute, func() bool { return ex.PoolStats().Ready == 1 }) {
		t.Fatalf("the pool did not fill: %+v", ex.PoolStats())
	}
	probe := "echo hi; grep -E '^(Seccomp|CapEff|NoNewPrivs):' /proc/self/status; test ! -e /etc/shadow || echo SHADOW"
	for _, mode := range []string{"warm", "cold"} {
		p := pol
		if mode == "cold" {
			p.Timeout = policy.Duration(59 * time.Second) // another policy: not the pool's
		}
		before := ex.PoolStats().Warm
		res := run(executor.Request{Args: []string{"/bin/sh", "-c", probe}, Policy: p})
		warm := ex.PoolStats().Warm > before
		want := "hi\nSeccomp:\t2\nNoNewPrivs:\t1\nCapEff:\t0000000000000000\n"
		if res.Status != nsjail.StatusOK || warm != (mode == "warm") || !sameLines(res.Stdout, want) ||
			strings.Contains(res.Stdout, "SHADOW") || res.Enforced.Seccomp != "default" {
			t.Errorf("%s (warm %v): status %s, stdout %q, enforced %+v", mode, warm, res.Status, res.Stdout, res.Enforced)
		}
	}
	testutil.RequireBinary(t, "python3")
	kill := pol
	kill.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"getppid"}, Action: policy.ActKill}}
	res := run(executor.Request{Language: "python", Code: "import os; os.getppid(); print('survived')", Policy: kill})
	if res.Status != nsjail.StatusSeccompViolation || res.SeccompSyscall != "getppid" || strings.Contains(res.Stdout, "survived") {
		t.Errorf("kill rule: status %s, syscall %q, stdout %q", res.Status, res.SeccompSyscall, res.Stdout)
	}

	foreign, err := executor.New(executor.Config{WorkDir: work, InitPath: filepath.Join(bin, "airlock-init-other"), SpawnPath: spawn})
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	res, err = foreign.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", "echo RAN"}, Policy: pol})
	var se *policy.SetupError
	if !errors.As(err, &se) || se.Stage != "init binary" || !strings.Contains(err.Error(), "scripts/build") ||
		res == nil || res.Status != nsjail.StatusSetupError || strings.Contains(res.Stdout, "RAN") {
		t.Errorf("foreign init: %v, %+v", err, res)
	}
}

// sameLines reports whether got and want hold the same lines, in any
// order (grep prints /proc/self/status's lines in the kernel's order).
func sameLines(got, want string) bool {
	g, w := strings.Split(strings.TrimSpace(got), "\n"), strings.Split(strings.TrimSpace(want), "\n")
	if len(g) != len(w) {
		return false
	}
	for _, l := range w {
		found := false
		for _, m := range g {
			found = found || m == l
		}
		if !found {
			return false
		}
	}
	return true
}
