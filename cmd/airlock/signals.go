//go:build airlock_slim

package main

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The caller's signal dispositions. Go's runtime installs its handler on
// most signals as it starts, even one its caller ignored (it keeps only
// SIGHUP and SIGINT ignored), and an exec resets a handled signal to the
// default: a child of the CLI would not inherit what the CLI's caller
// ignored (a SIGPIPE, a SIGTERM under some supervisors), which a program
// run bare does. So the CLI reads them before its runtime starts
// (entry_*.s, or the constructor in a cgo build), and the program gets
// them back: the executor passes them to the init, which sets them just
// before its exec (executor.Config.SetSignals). airlock-daemon, exec'd by
// the CLI, gets them back too (restoreIgnoredSignals).

// restoreIgnoredSignals ignores again, right before an exec that
// replaces this process, the signals the caller left ignored: the exec
// keeps them ignored, as it would have from the caller, where this
// runtime's handlers would become the default. The process is about to
// be replaced: that these signals now go unhandled is what the next
// image would do with them anyway.
func restoreIgnoredSignals() {
	set, ok := entryIgnoredSignals()
	if !ok {
		return
	}
	runtime.LockOSThread() // the exec follows on this thread
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		if set&(1<<(sig-1)) == 0 || sig == unix.SIGKILL || sig == unix.SIGSTOP {
			continue
		}
		act := [4]uintptr{1} // SIG_IGN
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
}
