//go:build cgo

package main

/*
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

// stdout_closed records, before the Go runtime starts, whether airlock's
// fd 1 was closed: the runtime then opens /dev/null there (checkfds), so
// that from Go a closed stdout and one sent to /dev/null look alike. A
// constructor runs before the runtime in a cgo binary.
static int stdout_closed;

// ignored_signals: the signals the caller left ignored (bit n-1 for
// signal n), read before Go's runtime installs its handlers, which hide
// them from its children (signals.go).
static unsigned long long ignored_signals;

// blocked_signals: the signals the caller left blocked, read before Go's
// runtime unblocks those it needs on the main thread.
static unsigned long long blocked_signals;

struct airlock_ksigaction {
	unsigned long handler, flags, restorer, mask;
};

__attribute__((constructor)) static void airlock_check_stdout(void) {
	stdout_closed = fcntl(1, F_GETFD) < 0;
	for (int sig = 1; sig <= 64; sig++) {
		struct airlock_ksigaction old = {0};
		if (syscall(SYS_rt_sigaction, sig, 0, &old, sizeof old.mask) == 0 && old.handler == 1)
			ignored_signals |= 1ULL << (sig - 1);
	}
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, 0, &blocked_signals, sizeof blocked_signals);
}

static int airlock_stdout_closed(void) { return stdout_closed; }
static unsigned long long airlock_ignored_signals(void) { return ignored_signals; }
static unsigned long long airlock_blocked_signals(void) { return blocked_signals; }
*/
import "C"

// stdoutClosedAtStart reports whether fd 1 was closed when airlock
// started (`airlock ... >&-`): what Go's runtime put there is /dev/null,
// and a result written to it would be lost without a word.
func stdoutClosedAtStart() bool { return C.airlock_stdout_closed() != 0 }

// entryTimerSlack: a cgo build has no entry of its own, so its timer
// slack is its caller's (timerslack.go).
func entryTimerSlack() uint64 { return 0 }

// entrySignals are the ignored and the blocked signals the constructor
// read (always: it runs in every cgo build).
func entrySignals() (ignored, blocked uint64, ok bool) {
	return uint64(C.airlock_ignored_signals()), uint64(C.airlock_blocked_signals()), true
}
