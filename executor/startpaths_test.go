package executor_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// startPaths are the configurations a program is started by, for a test
// that checks what the program gets on each: a sandbox this process
// forks (the program its pid 1, no reaper), one the spawn helper makes
// with the init binary (the CLI's path), a warm pool's (the reaper waits
// for the request) and a reused one (one sandbox serves run after run).
// pool is the pools' policy.
func startPaths(t *testing.T, pool policy.Policy) map[string]executor.Config {
	t.Helper()
	bin := testutil.BinDir(t)
	helpers := executor.Config{InitPath: filepath.Join(bin, "airlock-init-plain"), SpawnPath: filepath.Join(bin, "airlock-spawn")}
	testutil.RequireFeature(t, "airlock-spawn built", testutil.Exists(helpers.SpawnPath))
	warm, reused := helpers, helpers
	warm.Pool = executor.PoolConfig{Size: 1, Policy: pool}
	reused.Pool = executor.PoolConfig{Size: 1, Policy: pool, Reuse: 10}
	return map[string]executor.Config{"forked": {}, "helpers": helpers, "warm pool": warm, "reused": reused}
}

// poolReady waits until ex's pool, if cfg has one, holds a prepared
// sandbox: the next request is then served warm.
func poolReady(t *testing.T, ex *executor.Executor, cfg executor.Config) {
	t.Helper()
	if cfg.Pool.Size > 0 && !testutil.WaitFor(30*time.Second, func() bool { return ex.PoolStats().Ready > 0 }) {
		t.Fatal("the pool prepared no sandbox")
	}
}
