package nsjail_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// J01 for the supervisor's two writes to the init, which the strace
// fault harness (cmd/airlock) cannot always reach by per-thread call
// counts: a spec or program write to an init that is gone fails closed,
// as a setup error naming the step, with the write's EPIPE.
func TestSendToDeadInit(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/true"}, Policy: policy.Default()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		program bool
		stage   string
	}{{false, "send spec"}, {true, "send program"}} {
		err := nsjail.SendToDeadInit(spec, c.program)
		var se *policy.SetupError
		if !errors.As(err, &se) || se.Stage != c.stage || !errors.Is(se.Err, syscall.EPIPE) {
			t.Errorf("program %v: %v (%#v), want a setup error at %q with EPIPE", c.program, err, se, c.stage)
		}
	}
}
