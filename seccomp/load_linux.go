//go:build linux

package seccomp

import "github.com/airlock-sandbox/airlock/internal/bpfprog"

// Load installs p as a seccomp filter on every thread of the calling
// process (bpfprog.Load, which the sandbox init calls itself).
func Load(p Program, listen bool) (int, error) { return bpfprog.Load(p, listen) }

// ActionAvailable reports whether the kernel supports the filter return
// action ret (SECCOMP_GET_ACTION_AVAIL).
func ActionAvailable(ret uint32) bool { return bpfprog.ActionAvailable(ret) }

// LoadReachable reports whether a filter load reaches the kernel's
// seccomp(2) at all: false when a filter above this process answers the
// call with an error of its own (a container runtime's profile). It
// installs nothing (the load has no program).
func LoadReachable() bool { return bpfprog.FlagSupported(0) }

// ReceiveNotification waits for the next notification on a listener and
// returns the syscall number and arch it reports (bpfprog).
func ReceiveNotification(listener int) (nr int32, arch uint32, err error) {
	return bpfprog.ReceiveNotification(listener)
}
