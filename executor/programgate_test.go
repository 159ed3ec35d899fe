package executor_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// A request's ProgramGate holds its program back until it is closed
// (the CLI's signal forwarding is set up meanwhile): cold, cold with the
// spawn helper and init binary (the CLI's own path), from a warm pool and
// from a pooled sandbox reused across requests, the program has not run, and the run not ended, while the gate
// is shut, and it runs once the gate opens; a gate that never opens ends
// in the timeout.
func TestProgramGate(t *testing.T) {
	testutil.RequireUserNS(t)
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	bin := testutil.BinDir(t)
	spawn := filepath.Join(bin, "airlock-spawn")
	configs := map[string]executor.Config{"cold": {}, "warm pool": {Pool: executor.PoolConfig{Size: 1, Policy: pol}}}
	if testutil.Exists(spawn) {
		configs["cold, helpers"] = executor.Config{InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: spawn}
		configs["warm pool, reused"] = executor.Config{InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: spawn,
			Pool: executor.PoolConfig{Size: 1, Policy: pol, Reuse: 10}}
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			cfg.WorkDir = testutil.WorldReadableDir(t)
			// The program leaves a mark in a host directory bound as its
			// workspace (writable by whoever it runs as on the host).
			ws := testutil.WorldReadableDir(t)
			if err := os.Chmod(ws, 0o777); err != nil {
				t.Fatal(err)
			}
			pol := pol
			pol.Workspace = ws
			cfg.Pool.Policy = pol
			ran := filepath.Join(ws, "ran")
			ex, err := executor.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			if cfg.Pool.Size > 0 && !testutil.WaitFor(30*time.Second, func() bool { return ex.PoolStats().Ready > 0 }) {
				t.Fatal("the pool prepared no sandbox")
			}
			gate := make(chan struct{})
			type outcome struct {
				res *executor.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", "echo ran > /workspace/ran; echo ran"}, Policy: pol, ProgramGate: gate})
				done <- outcome{res, err}
			}()
			select {
			case o := <-done:
				t.Fatalf("the run ended with its gate shut: %+v %v", o.res, o.err)
			case <-time.After(500 * time.Millisecond):
			}
			if testutil.Exists(ran) {
				t.Fatal("the program ran with its gate shut")
			}
			close(gate)
			o := <-done
			if o.err != nil || o.res.Status != nsjail.StatusOK || o.res.Stdout != "ran\n" || !testutil.Exists(ran) {
				t.Fatalf("%+v %v", o.res, o.err)
			}
			os.Remove(ran)
			// A gate that never opens is bounded by the timeout: the run
			// ends, its program never ran.
			short := pol
			short.Timeout = policy.Duration(time.Second)
			if cfg.Pool.Size > 0 && !testutil.WaitFor(30*time.Second, func() bool { return ex.PoolStats().Ready > 0 }) {
				t.Fatal("the pool prepared no sandbox")
			}
			res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", "echo ran > /workspace/ran; echo ran"}, Policy: short, ProgramGate: make(chan struct{})})
			if res == nil || res.Status != nsjail.StatusTimeout || res.Stdout != "" || testutil.Exists(ran) {
				t.Fatalf("a shut gate and a timeout of 1s: %+v %v", res, err)
			}
		})
	}
}
