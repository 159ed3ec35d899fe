package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/hostprobe"
)

// Issue 24: `--backend process --net none` ran on the host's network.
// Now it exits 125 before anything runs, naming the control and the fix;
// --best-effort runs it and lists the network as not enforced; without
// --net the process backend runs and says the network is not isolated.
// Issue 21: where Landlock has network rules (ABI 4), --net none runs,
// TCP denied (executor's TestProcessBackendNetNone has the listener).
func TestProcessBackendNetNoneCLI(t *testing.T) {
	if hostprobe.Probe(hostprobe.Options{NoCgroup: true}).Has(policy.CheckLandlockNet) {
		code, res, _ := result(t, "--backend", "process", "--net", "none", "--", "sh", "-c", "echo RAN")
		if code != 0 || res.Stdout != "RAN\n" || res.Enforced.Network != "landlock" || res.Enforced.Landlock == 0 {
			t.Errorf("--backend process --net none under Landlock: exit %d, %+v", code, res)
		}
		return
	}
	// Issue 42: --best-effort alone degrades limits only; the network
	// (and, below Landlock ABI 6, signal isolation) each by name.
	for _, args := range [][]string{{"--net", "none"}, {"--net", "none", "--best-effort"}, nil} {
		a := append(append([]string{"--backend", "process"}, args...), "--", "sh", "-c", "echo RAN")
		code, out, errOut := airlock(t, "", a...)
		if code != exitSetup || strings.Contains(out, "RAN") || !strings.Contains(errOut, "network isolation") ||
			!strings.Contains(errOut, "fix:") || !strings.Contains(errOut, "--best-effort=") || !strings.Contains(errOut, "network") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", a, code, out, errOut)
		}
	}
	code, res, _ := result(t, "--backend", "process", "--net", "none", "--best-effort=network,landlock", "--", "sh", "-c", "echo RAN")
	if code != 0 || res.Stdout != "RAN\n" || !slices.Contains(res.Enforced.NotEnforced, "network isolation") {
		t.Errorf("--backend process --net none --best-effort=network,landlock: exit %d, %+v", code, res)
	}
}
