//go:build linux

package seccomp

import (
	"github.com/airlock-sandbox/airlock/internal/bpfprog"
	"golang.org/x/sys/unix"
)

// kernelAPI6 reports whether the kernel has everything libseccomp's API
// level 6 asks of it (its seccomp_api_get, levels 2 to 6, each needing
// the one before): the TSYNC, LOG, SPEC_ALLOW, NEW_LISTENER and
// TSYNC_ESRCH filter flags and the LOG, KILL_PROCESS and USER_NOTIF
// actions. A binary without cgo judges notification support with it;
// TestKernelAPI6MatchesLibseccomp holds it to libseccomp's own answer.
func kernelAPI6() bool {
	for _, f := range []uintptr{unix.SECCOMP_FILTER_FLAG_TSYNC, unix.SECCOMP_FILTER_FLAG_LOG, unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH} {
		if !bpfprog.FlagSupported(f) {
			return false
		}
	}
	for _, a := range []uint32{unix.SECCOMP_RET_LOG, unix.SECCOMP_RET_KILL_PROCESS, RetUserNotif} {
		if !bpfprog.ActionAvailable(a) {
			return false
		}
	}
	return true
}
