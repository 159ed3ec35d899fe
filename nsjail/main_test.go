package nsjail_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// supervisorEnv makes the test binary act as a bare supervisor process:
// it runs `sleep MARKER` in a sandbox with the given output cap, used by
// the tests that kill or measure the supervisor from outside.
const supervisorEnv = "AIRLOCK_TEST_SUPERVISOR"

// initPathEnv and spawnPathEnv set that supervisor's Config.InitPath and
// Config.SpawnPath.
const initPathEnv, spawnPathEnv = "AIRLOCK_TEST_INIT_PATH", "AIRLOCK_TEST_SPAWN_PATH"

func TestMain(m *testing.M) {
	nsjail.Init()
	if args := os.Getenv(supervisorEnv); args != "" {
		os.Exit(superviseForTest(strings.Fields(args)))
	}
	os.Exit(m.Run())
}

// superviseForTest runs args in a sandbox with captured output capped at
// AIRLOCK_TEST_CAP bytes and prints the status.
func superviseForTest(args []string) int {
	p := policy.Default()
	p.Timeout = policy.Duration(2 * time.Minute)
	if c, err := strconv.ParseInt(os.Getenv("AIRLOCK_TEST_CAP"), 10, 64); err == nil {
		p.MaxOutput = policy.Size(c)
	}
	ex, _ := executor.New(executor.Config{InitPath: os.Getenv(initPathEnv), SpawnPath: os.Getenv(spawnPathEnv)})
	res, err := ex.Execute(context.Background(), executor.Request{Args: args, Policy: p})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s %d\n", res.Status, len(res.Stdout))
	return 0
}
