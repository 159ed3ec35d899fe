//go:build linux

package jailinit

import (
	"syscall"

	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"golang.org/x/sys/unix"
)

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
	if err := launchabi.IgnoreSignals(ignored); err != nil {
		return err
	}
	for _, sig := range keptByGo {
		if ignored&(1<<(sig-1)) == 0 {
			if err := launchabi.SetSignal(sig, launchabi.SigDfl); err != nil {
				return err
			}
		}
	}
	return nil
}
