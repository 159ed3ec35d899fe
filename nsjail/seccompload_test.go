package nsjail_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// A filter the kernel refuses to load fails the run closed, cold and
// prepared: a setup error at the "seccomp" stage carrying the kernel's
// errno, and the program never runs (its marker file never appears in
// the workspace). The fault harness's seccomp/load cases reach the same
// path by injection, when the CLI's own probe of seccomp actions is not
// the call that strace's per-thread ordinal hits first.
func TestFilterLoadFailureFailsClosed(t *testing.T) {
	testutil.RequireUserNS(t)
	ws := testutil.WorldReadableDir(t)
	ex, _ := executor.New(executor.Config{})
	defer ex.Close()
	p := policy.Default()
	p.Workspace = ws
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "touch /workspace/ran"}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	// An opcode classic BPF does not have: seccomp(2) answers EINVAL.
	spec.Seccomp = &seccomp.Filter{Profile: "broken", Rules: 1, Program: seccomp.Program{{Code: 0xffff}, {Code: 0x06, K: unix.SECCOMP_RET_ALLOW}}}
	check := func(mode string, res *nsjail.Result, err error) {
		t.Helper()
		var se *policy.SetupError
		if !errors.As(err, &se) || se.Stage != "seccomp" || !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: error %v, want a setup error at stage seccomp with EINVAL", mode, err)
		}
		if res == nil || res.Status != nsjail.StatusSetupError || res.Error == nil || !strings.Contains(res.Error.Message, "seccomp") || res.Error.Stage != "seccomp" {
			t.Errorf("%s: result %+v", mode, res)
		}
		if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
			t.Fatalf("%s: the program ran without its filter", mode)
		}
	}
	res, err := nsjail.Run(t.Context(), spec)
	check("cold", res, err)
	prep, err := nsjail.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	res, err = prep.Run(t.Context(), spec)
	check("prepared", res, err)
}
