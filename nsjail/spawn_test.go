package nsjail_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// launchers are the two ways an init starts: forked by the supervisor
// (Go's clone with the namespaces), or by the spawn helper
// (cmd/airlock-spawn, Spec.SpawnPath). Both run the separately built init
// (the helper cannot re-execute the supervisor).
func launchers(t *testing.T) map[string]executor.Config {
	bin := testutil.BinDir(t)
	init := filepath.Join(bin, "airlock-init-plain")
	spawn := filepath.Join(bin, "airlock-spawn")
	testutil.RequireFeature(t, "the spawn helper built beside airlock (scripts/build, gcc)", testutil.Exists(spawn))
	return map[string]executor.Config{
		"fork":  {InitPath: init},
		"spawn": {InitPath: init, SpawnPath: spawn},
	}
}

// The spawn helper is invisible in every outcome: a sandbox it starts
// ends with the same status, exit code and signal as a forked one, dies
// whole at its timeout and at Kill, and is placed the same; its init is
// the sandbox's pid 1, the helper its parent holding none of its fds;
// an init that cannot be exec'd is the same error.
func TestSpawnHelper(t *testing.T) {
	testutil.RequireUserNS(t)
	python := testutil.RequireBinary(t, "python3")
	for name, cfg := range launchers(t) {
		t.Run(name, func(t *testing.T) {
			ex, err := executor.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			pol := policy.Default()
			pol.Timeout = policy.Duration(time.Minute)
			resolve := func(t *testing.T, p policy.Policy, args ...string) nsjail.Spec {
				t.Helper()
				spec, _, err := ex.Resolve(executor.Request{Args: args, Policy: p})
				if err != nil {
					t.Fatal(err)
				}
				return spec
			}
			run := func(t *testing.T, p policy.Policy, args ...string) *nsjail.Result {
				t.Helper()
				res, err := ex.Execute(t.Context(), executor.Request{Args: args, Policy: p})
				if err != nil {
					t.Fatalf("%v %+v", err, res)
				}
				return &res.Result
			}
			t.Run("exit code", func(t *testing.T) {
				if res := run(t, pol, "/bin/sh", "-c", "echo out; exit 7"); res.Status != nsjail.StatusExited || res.ExitCode != 7 || res.Stdout != "out\n" {
					t.Errorf("%+v", res)
				}
			})
			// The helper pins its child to its own CPU for the child's
			// first steps (cmd/airlock-spawn: pinToThisCPU); the init and
			// the program must have the caller's affinity all the same.
			t.Run("affinity", func(t *testing.T) {
				testutil.RequireCPUs(t, 2)
				res := run(t, pol, "/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status /proc/1/status")
				self := procStatus(t, os.Getpid())["Cpus_allowed_list"]
				w := "/proc/self/status:Cpus_allowed_list:\t" + self + "\n/proc/1/status:Cpus_allowed_list:\t" + self + "\n"
				if res.Status != nsjail.StatusOK || res.Stdout != w {
					t.Errorf("got %+v, want the program and the init on this process's CPUs %s", res, self)
				}
			})
			t.Run("fault", func(t *testing.T) {
				res := run(t, pol, python, "-I", "-S", "-c", "import ctypes; ctypes.string_at(0)")
				if res.Status != nsjail.StatusSignaled || res.Signal != "SIGSEGV" {
					t.Errorf("%+v", res)
				}
			})
			t.Run("timeout kills the tree", func(t *testing.T) {
				m := marker()
				p := pol
				p.Timeout = policy.Duration(time.Second)
				res := run(t, p, "/bin/sh", "-c", "setsid sh -c 'sleep "+m+" &' </dev/null >/dev/null 2>&1; exec sleep "+m)
				if res.Status != nsjail.StatusTimeout || res.Signal != "SIGKILL" {
					t.Errorf("%+v", res)
				}
				if left := testutil.HostProcsWith("sleep", m); len(left) != 0 {
					t.Errorf("left on the host: %v", left)
				}
			})
			t.Run("process tree", func(t *testing.T) {
				m := marker()
				sb, err := nsjail.Start(t.Context(), resolve(t, pol, "sleep", m))
				if err != nil {
					t.Fatal(err)
				}
				defer sb.Wait()
				defer sb.Kill()
				pid := sb.Pid()
				// The sleeper is the init, or its reaper's child.
				if got := testutil.HostProcsWith("sleep", m); len(got) != 1 || (got[0] != pid && procStatus(t, got[0])["PPid"] != strconv.Itoa(pid)) {
					t.Fatalf("Pid %d, the sleeper on the host %v", pid, got)
				}
				st := procStatus(t, pid)
				if f := strings.Fields(st["NSpid"]); len(f) != 2 || f[1] != "1" {
					t.Errorf("Pid() is not the sandbox's pid 1: NSpid %q", st["NSpid"])
				}
				ppid, _ := strconv.Atoi(st["PPid"])
				if cfg.SpawnPath == "" {
					if ppid != os.Getpid() {
						t.Errorf("forked init's parent %d, want this process %d", ppid, os.Getpid())
					}
					return
				}
				exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
				if exe != cfg.SpawnPath || procStatus(t, ppid)["PPid"] != strconv.Itoa(os.Getpid()) {
					t.Errorf("init's parent %d is %q, want the helper %s, a child of this process", ppid, exe, cfg.SpawnPath)
				}
				if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", ppid)); err != nil || len(fds) != 0 {
					t.Errorf("the helper holds fds %v (%v), want none", fds, err)
				}
				// The kill goes to the init; the helper then ends as it did.
				sb.Kill()
				res, err := sb.Wait()
				if err != nil || res.Status != nsjail.StatusSignaled || res.Signal != "SIGKILL" {
					t.Errorf("after Kill: %v %+v", err, res)
				}
				if testutil.Exists(fmt.Sprintf("/proc/%d", ppid)) || testutil.Exists(fmt.Sprintf("/proc/%d", pid)) {
					t.Errorf("after Wait the helper (%d) or the init (%d) is still there", ppid, pid)
				}
			})
			t.Run("no init", func(t *testing.T) {
				spec := resolve(t, pol, "/bin/true")
				spec.InitPath = filepath.Join(testutil.WorldReadableDir(t), "missing")
				res, err := nsjail.Run(t.Context(), spec)
				var se *policy.SetupError
				if !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing") ||
					res == nil || res.Status != nsjail.StatusSetupError {
					t.Errorf("got %v, %+v", err, res)
				}
			})
		})
	}
}

// procStatus returns /proc/PID/status as a map.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
