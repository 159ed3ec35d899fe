package executor_test

import (
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/nsjail"
)

func TestMain(m *testing.M) {
	nsjail.Init()
	os.Exit(m.Run())
}
