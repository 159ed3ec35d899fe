// Package executor is airlock's high-level API: it resolves a request
// and its policy into a fully resolved jail spec and runs it.
//
// # Use
//
//	ex, err := executor.New(executor.Config{})
//	res, err := ex.Execute(ctx, executor.Request{Args: []string{"python3", "-c", code}})
//
// Execute is safe for concurrent use. Program outcomes (non-zero exit,
// signal, timeout, output overflow) are Results; a non-nil error means
// there is no trusted outcome, and errors.Is with ErrInvalid,
// ErrUnsupported or ErrUnavailable says whether to fix the request, give
// up on this host, or retry.
//
// # Fail closed
//
// A policy that asks for a control this host or build cannot enforce is
// refused before anything runs, with the control and the fix named,
// unless the policy is best_effort; Result.Enforced records what was
// applied and what best_effort let go.
//
// Binaries that use this package must call nsjail.Init first thing in
// main.
package executor
