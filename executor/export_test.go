package executor

import (
	"errors"

	"github.com/airlock-sandbox/airlock/policy"
)

// SimulateNoNamespaces makes e behave as on a host without user
// namespaces (its userns check missing, with err's reason and fix), for
// the fallback tests.
func SimulateNoNamespaces(e *Executor, err error) {
	c := e.host.Get(policy.CheckUserNS)
	c.OK, c.Detail, c.Fix = false, err.Error(), ""
	var u *policy.UnsupportedError
	if errors.As(err, &u) {
		c.Detail, c.Fix = u.Reason, u.Fix
	}
	e.host.Set(c)
}

// SimulateLandlock makes e behave as on a host whose kernel has Landlock
// ABI abi (0: none), for the tests of the checks that need it.
func SimulateLandlock(e *Executor, abi int) {
	e.host.Landlock = abi
	for _, c := range []struct {
		id  policy.CheckID
		min int
	}{{policy.CheckLandlock, policy.LandlockFS}, {policy.CheckLandlockNet, policy.LandlockNet}, {policy.CheckLandlockScope, policy.LandlockScope}} {
		cap := e.host.Get(c.id)
		cap.OK, cap.Detail, cap.Fix = abi >= c.min, "simulated", "a newer kernel"
		e.host.Set(cap)
	}
}

// SimulateNoReaper makes e run the program as pid 1 even with a
// SpawnPath (nsjail.Spec.NoReaper), for the reaper's A/B in the bench.
func SimulateNoReaper(e *Executor) { e.noReaper = true }
