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
