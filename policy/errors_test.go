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
