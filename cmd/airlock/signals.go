//go:build airlock_slim

package main

import (
	"runtime"

	"github.com/airlock-sandbox/airlock/internal/launchabi"
)

// The caller's signal dispositions. Go's runtime installs its handler on
// most signals as it starts, even one its caller ignored (it keeps only
// SIGHUP and SIGINT ignored), and an exec resets a handled signal to the
// default: a child of the CLI would not inherit what the CLI's caller
// ignored (a SIGPIPE, a SIGTERM under some supervisors), which a program
// run bare does. So the CLI reads them before its runtime starts
// (entry_*.s, or the constructor in a cgo build), with the signal mask
// the caller left, and the program gets them back: the executor passes
// them to the init, which sets them just before its exec
// (executor.Config.SetSignals, SignalsBlocked). airlock-daemon, exec'd by
// the CLI, gets them back too (restoreIgnoredSignals).

// restoreIgnoredSignals ignores again, right before an exec that
// replaces this process, the signals the caller left ignored: the exec
// keeps them ignored, as it would have from the caller, where this
// runtime's handlers would become the default. It also makes the
// calling thread's mask the caller's, which the exec keeps. The process
// is about to be replaced: that these signals now go unhandled is what
// the next image would do with them anyway.
func restoreIgnoredSignals() {
	ignored, blocked, ok := entrySignals()
	if !ok {
		return
	}
	runtime.LockOSThread() // the exec follows on this thread
	// Best effort: the exec follows whatever happens.
	_ = launchabi.IgnoreSignals(ignored)
	_ = launchabi.SetBlocked(blocked)
}
