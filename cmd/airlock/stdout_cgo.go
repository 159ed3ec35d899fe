//go:build cgo

package main

/*
#include <fcntl.h>

// stdout_closed records, before the Go runtime starts, whether airlock's
// fd 1 was closed: the runtime then opens /dev/null there (checkfds), so
// that from Go a closed stdout and one sent to /dev/null look alike. A
// constructor runs before the runtime in a cgo binary.
static int stdout_closed;

__attribute__((constructor)) static void airlock_check_stdout(void) {
	stdout_closed = fcntl(1, F_GETFD) < 0;
}

static int airlock_stdout_closed(void) { return stdout_closed; }
*/
import "C"

// stdoutClosedAtStart reports whether fd 1 was closed when airlock
// started (`airlock ... >&-`): what Go's runtime put there is /dev/null,
// and a result written to it would be lost without a word.
func stdoutClosedAtStart() bool { return C.airlock_stdout_closed() != 0 }

// entryTimerSlack: a cgo build has no entry of its own, so its timer
// slack is its caller's (timerslack.go).
func entryTimerSlack() uint64 { return 0 }
