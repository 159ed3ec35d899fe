//go:build !cgo

package main

import (
	"os"

	_ "github.com/airlock-sandbox/airlock/cmd/airlock/internal/entryvec" // _rt0_airlock calls it
	_ "github.com/airlock-sandbox/airlock/internal/prefault"             // and it
)

// stdoutProbe is fcntl(1, F_GETFD)'s raw return at the process's entry,
// before Go's runtime opened /dev/null at a closed fd 1 (its checkfds):
// negative (-EBADF) when stdout was closed. _rt0_airlock (entry_*.s) sets
// it in a binary linked with -E _rt0_airlock, as scripts/build links the
// CLI on amd64 and arm64; anywhere else it keeps probeUnset.
var stdoutProbe int64 = probeUnset

const probeUnset = 1 << 62

// slackProbe is prctl(PR_GET_TIMERSLACK)'s raw return at the process's
// entry: the timer slack airlock's caller gave it, in ns, before
// _rt0_airlock raised the main thread's (timerslack.go); probeUnset
// without the entry.
var slackProbe int64 = probeUnset

// ignoredProbe is the set of signals airlock's caller left ignored (bit
// n-1 for signal n), as _rt0_airlock read them with rt_sigaction before
// Go's runtime started, and blockedProbe those it left blocked, read
// with rt_sigprocmask; sigProbed is 1 once it did. sigBuf receives each
// old action (the kernel's struct sigaction: handler first).
var (
	ignoredProbe uint64
	blockedProbe uint64
	sigProbed    int64
	//lint:ignore U1000 written by _rt0_airlock (entry_*.s) only
	sigBuf [4]uint64
)

// maxprocsSet is 1 when _rt0_airlock appended GOMAXPROCS=1 to the
// environment the runtime started with (internal/entryvec).
var maxprocsSet int64

// The appended GOMAXPROCS=1 leaves the CLI's environment before anything
// reads it: package main's variables are initialized before main runs,
// and the packages initialized before main's read none of it (early
// starts the init with an environment of its own).
var _ = dropEntryEnv()

// dropEntryEnv takes GOMAXPROCS=1 out of the environment if the entry
// put it there: its caller had none.
func dropEntryEnv() bool {
	if maxprocsSet == 1 {
		os.Unsetenv("GOMAXPROCS")
	}
	return true
}

// entrySignals are the ignored and the blocked signals the entry read,
// and whether it did.
func entrySignals() (ignored, blocked uint64, ok bool) {
	return ignoredProbe, blockedProbe, sigProbed == 1
}

// entryTimerSlack is the caller's timer slack the entry recorded when it
// raised the CLI's own, or 0 where it did neither.
func entryTimerSlack() uint64 {
	if slackProbe <= 0 || slackProbe == probeUnset {
		return 0
	}
	return uint64(slackProbe)
}

// stdoutClosedAtStart reports whether fd 1 was closed when airlock
// started (`airlock ... >&-`): what Go's runtime put there is /dev/null,
// and a result written to it would be lost without a word. Without the
// entry probe, a closed stdout cannot be told from /dev/null: false.
func stdoutClosedAtStart() bool { return stdoutProbe < 0 }
