//go:build linux

package jailinit

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigaction is the kernel's struct sigaction on amd64 and arm64 (both
// have sa_restorer), with a one-word signal set.
type sigaction struct {
	handler, flags, restorer, mask uintptr
}

// The handlers SIG_DFL and SIG_IGN.
const sigDfl, sigIgn uintptr = 0, 1

// keptByGo are the signals whose disposition a Go runtime keeps as it
// inherited it (runtime.initsig): SIGHUP and SIGINT when ignored, the
// job-control stops it leaves at their default action (_SigDefault), and
// glibc's two internal signals (_SigSetStack). On every other signal it
// installs a handler, which the exec resets to the default.
var keptByGo = []syscall.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, 32, 33}

// setSignals gives the program its caller's signal dispositions
// (initConfig.SetSignals): the signals of ignored (bit n-1 for signal n)
// ignored, every other one at its default. A disposition is the
// process's, so it is set once, just before the filter and the exec:
// what this runtime still does before the exec (the filter's load, the
// ready report) needs none of its handlers. Only what the exec would not
// reset is set: an ignored signal stays ignored through it, a handled one
// becomes the default.
func setSignals(ignored uint64) error {
	set := func(sig syscall.Signal, handler uintptr) error {
		act := sigaction{handler: handler}
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act.mask), 0, 0); errno != 0 {
			return errno
		}
		return nil
	}
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		if ignored&(1<<(sig-1)) != 0 && sig != unix.SIGKILL && sig != unix.SIGSTOP {
			if err := set(sig, sigIgn); err != nil {
				return err
			}
		}
	}
	for _, sig := range keptByGo {
		if ignored&(1<<(sig-1)) == 0 {
			if err := set(sig, sigDfl); err != nil {
				return err
			}
		}
	}
	return nil
}
