//go:build linux

package bpfprog

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
// With listen it also asks for a user-notification listener (needed when
// the program kills through SECCOMP_RET_USER_NOTIF) and returns its fd;
// otherwise it returns -1.
//
// Preconditions: runs in the sandbox init, on the thread that will
// execve, after no_new_privs is set, as the last step before execve: the
// filter must allow what the Go runtime and execve need until then.
func Load(p Program, listen bool) (int, error) {
	if len(p) == 0 || len(p) > MaxInstructions {
		return -1, fmt.Errorf("seccomp: program of %d instructions (want 1..%d)", len(p), MaxInstructions)
	}
	filter := make([]unix.SockFilter, len(p))
	for i, in := range p {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_TSYNC)
	if listen {
		// TSYNC and NEW_LISTENER both want the return value: ESRCH makes
		// a TSYNC failure an error instead of a thread id (Linux 5.7).
		flags |= unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return -1, os.NewSyscallError("seccomp", errno)
	}
	if listen {
		return int(r), nil
	}
	if r != 0 {
		// With plain TSYNC a positive return is the id of a thread that
		// could not be synchronized: the filter was not loaded at all.
		return -1, fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return -1, nil
}

// ActionAvailable reports whether the kernel supports the filter return
// action ret (SECCOMP_GET_ACTION_AVAIL).
func ActionAvailable(ret uint32) bool {
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&ret)))
	return errno == 0
}

// FlagSupported reports whether the kernel knows the filter flag flag, as
// libseccomp probes it: SECCOMP_SET_MODE_FILTER with the flag and no
// program fails with EFAULT (reading the program) only once the flag was
// accepted. Nothing is installed.
func FlagSupported(flag uintptr) bool {
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flag, 0)
	return errno == unix.EFAULT
}

// notif is struct seccomp_notif.
type notif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

// ReceiveNotification waits for the next notification on a listener and
// returns the syscall number and arch it reports. The notifying task
// stays blocked in its syscall (airlock kills, it never answers).
func ReceiveNotification(listener int) (nr int32, arch uint32, err error) {
	var n notif // the kernel wants it zeroed
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return -1, 0, os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", errno)
	}
	return n.nr, n.arch, nil
}
