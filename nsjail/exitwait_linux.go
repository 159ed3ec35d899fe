package nsjail

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once the child pid (not yet reaped: its pid stays
// its own) has exited, having waited in the runtime's poller on a pidfd
// of its own: the wait that follows (exec.Cmd.Wait, a blocking waitid)
// then returns at once. Without it that waitid would block for the whole
// run in a system call that keeps the goroutine's P: with one P (the
// CLI's GOMAXPROCS) nothing else runs until sysmon retakes it, one of
// its ticks later, which it stretches to up to 10 ms when idle (a run
// whose report was read while its helper's wait began stalled 1.06 ms
// there, with both cores idle part of it: perf sched, 2026-11-28).
// Where the pidfd cannot be had or polled (before Linux 5.10, no
// PIDFD_NONBLOCK), it returns at once and the blocking wait does it all.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd") // non-blocking: in the poller
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Read calls this until it returns true, waiting for the pidfd to be
	// readable (the process exited) in between; an error ends the wait,
	// for the blocking one to settle.
	rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0 // SIGCHLD once it has exited; 0 before
	})
}
