//go:build linux

package seccomp

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Load installs p as a seccomp filter on every thread of the calling
// process: seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC).
// It is pure Go (no cgo runs after clone) and loads the bytes as given.
//
// Preconditions: runs in the sandbox init, on the thread that will
// execve, after no_new_privs is set, as the last step before execve: the
// filter must allow what the Go runtime and execve need until then.
func Load(p Program) error {
	if len(p) == 0 || len(p) > MaxInstructions {
		return fmt.Errorf("seccomp: program of %d instructions (want 1..%d)", len(p), MaxInstructions)
	}
	filter := make([]unix.SockFilter, len(p))
	for i, in := range p {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return os.NewSyscallError("seccomp", errno)
	}
	if r != 0 {
		// With TSYNC a positive return is the id of a thread that could
		// not be synchronized: the filter was not loaded at all.
		return fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return nil
}
