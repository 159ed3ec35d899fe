package policy

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestSetupErrorClassFollowsErrno(t *testing.T) {
	for _, tc := range []struct {
		stage string
		errno syscall.Errno
		class error
	}{
		{"clone", syscall.EAGAIN, ErrUnavailable},
		{"rootfs", syscall.ENOMEM, ErrUnavailable},
		// The stage is a label: a refused clone is classified by the
		// launcher, as an *UnsupportedError, not by its stage's name.
		{"clone", syscall.EPERM, nil},
		{"clone", syscall.ENOSPC, nil},
		{"rootfs", syscall.ENOSYS, ErrUnsupported},
		{"rootfs", syscall.EPERM, nil},
		{"exec", syscall.ENOENT, nil},
	} {
		err := error(&SetupError{Stage: tc.stage, Err: fmt.Errorf("step: %w", tc.errno)})
		for _, class := range []error{ErrUnavailable, ErrUnsupported, ErrInvalid} {
			if got := errors.Is(err, class); got != (class == tc.class) {
				t.Errorf("%s/%v: errors.Is(%v) = %v", tc.stage, tc.errno, class, got)
			}
		}
		if !errors.Is(err, tc.errno) {
			t.Errorf("%s/%v: errno lost from the chain", tc.stage, tc.errno)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want ErrorInfo
	}{
		{Invalid("memory", "0 bytes"), ErrorInfo{Class: ClassInvalid, Field: "memory", Message: "invalid memory: 0 bytes"}},
		{fmt.Errorf("run: %w", &UnsupportedError{Control: "cpus", Reason: "no cpu controller", Fix: "delegate cpu"}),
			ErrorInfo{Class: ClassUnsupported, Field: "cpus", Fix: "delegate cpu", Message: "run: cpus: no cpu controller (fix: delegate cpu)"}},
		{&SetupError{Stage: "clone", Err: syscall.EAGAIN}, ErrorInfo{Class: ClassUnavailable, Retryable: true, Stage: "clone", Message: "setup: clone: " + syscall.EAGAIN.Error()}},
		{&SetupError{Stage: "pivot_root", Err: syscall.EPERM}, ErrorInfo{Class: ClassInternal, Stage: "pivot_root", Message: "setup: pivot_root: " + syscall.EPERM.Error()}},
		{errors.New("boom"), ErrorInfo{Class: ClassInternal, Message: "boom"}},
	} {
		if got := Describe(tc.err); got == nil || *got != tc.want {
			t.Errorf("Describe(%v) = %+v, want %+v", tc.err, got, tc.want)
		}
	}
	if Describe(nil) != nil {
		t.Error("Describe(nil) is not nil")
	}
}
