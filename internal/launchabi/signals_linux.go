package launchabi

import (
	"syscall"
	"unsafe"
)

// Sigaction is the kernel's struct sigaction on amd64 and arm64 (both
// have sa_restorer), with a one-word signal set: what rt_sigaction reads
// and writes, which Go's syscall package does not define.
type Sigaction struct {
	Handler, Flags, Restorer, Mask uintptr
}

// The handlers SIG_DFL and SIG_IGN.
const SigDfl, SigIgn uintptr = 0, 1

// SetSignal sets sig's disposition to handler (SigDfl or SigIgn) with a
// raw rt_sigaction, which Go's runtime does not see: for a process about
// to exec, where an ignored signal stays ignored and a handled one
// becomes the default (the init, and the CLI before it execs
// airlock-daemon).
func SetSignal(sig syscall.Signal, handler uintptr) error {
	act := Sigaction{Handler: handler}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act.Mask), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// SetBlocked makes set (bit n-1 for signal n) the calling thread's
// blocked signals, with a raw rt_sigprocmask: an exec keeps them (the
// init's, for its reaper and program; the CLI's, for airlock-daemon).
// The kernel leaves SIGKILL and SIGSTOP out.
func SetBlocked(set uint64) error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 2 /* SIG_SETMASK */, uintptr(unsafe.Pointer(&set)), 0, unsafe.Sizeof(set), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// IgnoreSignals ignores every signal of set (bit n-1 for signal n, 1 to
// 64) but SIGKILL and SIGSTOP, which cannot be: SetSignal for each.
func IgnoreSignals(set uint64) error {
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		if set&(1<<(sig-1)) != 0 && sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
			if err := SetSignal(sig, SigIgn); err != nil {
				return err
			}
		}
	}
	return nil
}
