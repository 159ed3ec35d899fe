package executor_test

import (
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/nsjail"
)

func TestMain(m *testing.M) {
	nsjail.Init()
	if cfg := os.Getenv(newInCgroupEnv); cfg != "" {
		os.Exit(newInCgroup(cfg)) // TestCgroupMoveSelf's process
	}
	os.Exit(m.Run())
}
