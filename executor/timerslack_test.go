package executor_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// The program starts with its caller's timer slack, not the init's
// (the spawn helper starts the init with launchabi.InitTimerSlack):
// Config.TimerSlack where set, else this process's, as a child of it
// would inherit; on each path a program is started by: a sandbox this
// process forks, one the spawn helper makes, a warm pool's waiting
// reaper, and a reused one, run after run.
func TestTimerSlack(t *testing.T) {
	testutil.RequireUserNS(t)
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	read := []string{"/bin/cat", "/proc/self/timerslack_ns"}
	// This process's: a child of any of its threads inherits it (none
	// sets its own).
	b, err := exec.Command(read[0], read[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	own := string(b)
	for name, cfg := range startPaths(t, pol) {
		for _, slack := range []uint64{0, 234567} {
			t.Run(name+"/"+strconv.FormatUint(slack, 10), func(t *testing.T) {
				want := own
				if slack != 0 {
					want = strconv.FormatUint(slack, 10) + "\n"
				}
				cfg.TimerSlack = slack
				cfg.WorkDir = testutil.WorldReadableDir(t)
				ex, err := executor.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer ex.Close()
				for run := range 2 {
					poolReady(t, ex, cfg)
					res, err := ex.Execute(t.Context(), executor.Request{Args: read, Policy: pol})
					if err != nil || res.Status != nsjail.StatusOK {
						t.Fatalf("run %d: %+v %v", run, res, err)
					}
					if res.Stdout != want {
						t.Errorf("run %d: the program's timer slack %q, want %q", run, strings.TrimSpace(res.Stdout), strings.TrimSpace(want))
					}
				}
			})
		}
	}
}
