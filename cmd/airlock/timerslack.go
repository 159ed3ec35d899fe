//go:build airlock_slim

package main

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// The CLI's timer slack. Built by scripts/build (entry_*.s), the CLI
// raises its main thread's timer slack to 1 ms at its entry, before Go's
// runtime starts and every thread it makes inherits it: the runtime's
// monitor thread (sysmon) sleeps 20 µs a cycle while the CLI works or
// waits in a system call, so that with the kernel's default slack of
// 50 µs it woke about every 70 µs of a run, each wake-up taken on the
// CPU the sandbox's init is starting on. The sandbox's init gets the
// same from the spawn helper. What this costs: the CLI's timers (the
// wall-clock timeout, the kill grace) fire up to 1 ms late.
//
// What the CLI starts gets the slack it was itself started with: the
// program through the executor (Config.TimerSlack: the init sets it on
// its exec thread), airlock-daemon through restoreTimerSlack.

// restoreTimerSlack gives the calling goroutine's thread the caller's
// timer slack back, and keeps the goroutine on it, for an exec that
// replaces this process (airlock-daemon): execve keeps the calling
// thread's slack. It does nothing where the entry did not raise it.
func restoreTimerSlack() {
	if s := entryTimerSlack(); s != 0 {
		runtime.LockOSThread()
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(s), 0, 0, 0)
	}
}
