//go:build linux

package jailinit

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// defaultSignals gives SIGHUP and SIGINT their default action where the
// init inherited them ignored, so that the program starts with both at
// their default whatever airlock's caller ignored (a background job of a
// non-interactive shell ignores SIGINT, nohup SIGHUP): airlock forwards
// them to the program, and one ignored would neither interrupt it nor
// let it install a handler (Python, for one, leaves an inherited SIGINT
// ignored). Go's runtime keeps these two ignored when it starts with
// them so, and every other signal it handles itself, which the exec
// resets to the default; a disposition set to ignored survives the exec.
// Before this, whether the program saw them ignored depended on whether
// the init was started before or after the supervisor registered its
// own handlers for them. The init is the sandbox's pid 1 (or, in the
// process backend, in a session of its own), so no signal reaches it
// meanwhile either way.
func defaultSignals() error {
	for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT} {
		// The kernel's struct sigaction, zeroed: SIG_DFL (0), no flags,
		// an empty mask (its layout differs by architecture; zero reads
		// the same in all).
		var old, dfl [4]uint64
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			return e
		}
		if old[0] != 1 { // SIG_IGN
			continue
		}
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
			return e
		}
	}
	return nil
}
