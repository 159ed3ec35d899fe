package executor

// SimulateNoNamespaces makes e behave as on a host without user
// namespaces, for the fallback tests.
func SimulateNoNamespaces(e *Executor, err error) { e.nsErr = err }
