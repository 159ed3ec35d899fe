package policy

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// The error classes. A Go error from airlock means there is no trusted
// outcome for the request; its class tells the caller what to do next.
// Program outcomes (non-zero exit, timeout, signals, output overflow) are
// never errors: they are reported in a Result.
var (
	// ErrInvalid: the request is wrong. Fix it; retrying the same request
	// will fail the same way.
	ErrInvalid = errors.New("invalid request")
	// ErrUnsupported: this host cannot enforce what the policy asks.
	// Retrying on the same host will fail the same way; change the host
	// (the message names the fix) or opt in to best_effort.
	ErrUnsupported = errors.New("unsupported on this host")
	// ErrUnavailable: a transient shortage (processes, memory, file
	// descriptors). A retry, possibly after a back-off, may succeed.
	ErrUnavailable = errors.New("temporarily unavailable")
)

// InvalidError says which field of a request or policy is wrong and why.
// It matches ErrInvalid with errors.Is.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalid returns an *InvalidError for field.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// UnsupportedError names a control the host cannot enforce and how to fix
// that. It matches ErrUnsupported and errors.ErrUnsupported.
type UnsupportedError struct {
	// Control is what the policy asked for, e.g. "cpus" or "namespaces".
	Control string
	// Check is the host check that is missing ("" when none is: the
	// chosen backend cannot enforce the control anywhere).
	Check CheckID
	// Reason says why the host cannot provide it.
	Reason string
	// Fix says what would make it work.
	Fix string
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Control, e.Reason)
	if e.Fix != "" {
		msg += " (fix: " + e.Fix + ")"
	}
	return msg
}

// Is reports whether target is ErrUnsupported or errors.ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool {
	return target == ErrUnsupported || target == errors.ErrUnsupported
}

// SetupError is a failure while building the sandbox, before the program
// ran. Stage names the step ("clone", "pivot_root", "exec", ...), for
// people: no class depends on it. Its class follows the errno alone:
// resource shortages are ErrUnavailable, a syscall the kernel lacks
// (ENOSYS, EOPNOTSUPP) is ErrUnsupported; anything else is an internal
// fault with no class. A refusal that means "this host cannot" (the kernel
// refusing the sandbox's namespaces) is classified where it happens, as an
// *UnsupportedError, never as a SetupError: EPERM from a mount inside the
// sandbox is a fault, EPERM from creating its namespaces is the host's
// policy, and only the code making the call knows which it got.
type SetupError struct {
	Stage string
	Err   error
}

func (e *SetupError) Error() string { return "setup: " + e.Stage + ": " + e.Err.Error() }

// Unwrap returns the underlying error (often a syscall.Errno).
func (e *SetupError) Unwrap() error { return e.Err }

// Is classifies the failure by its errno.
func (e *SetupError) Is(target error) bool {
	var errno syscall.Errno
	if !errors.As(e.Err, &errno) {
		return false
	}
	switch target {
	case ErrUnavailable:
		switch errno {
		case syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.EBUSY:
			return true
		}
	case ErrUnsupported:
		switch errno {
		case syscall.ENOSYS, syscall.EOPNOTSUPP:
			return true
		}
	}
	return false
}

// The classes of ErrorInfo, one per error class.
const (
	ClassInvalid     = "invalid"
	ClassUnsupported = "unsupported"
	ClassUnavailable = "unavailable"
	ClassInternal    = "internal"
)

// ErrorInfo is an error in the form a caller can program against: the
// "error" object of a result, of the CLI's --json output and of the
// server APIs. Retryable is true only for ClassUnavailable: an invalid
// request or a host that cannot enforce the policy fails the same way
// again, and an internal fault has no reason to go away.
type ErrorInfo struct {
	Class     string `json:"class"`
	Retryable bool   `json:"retryable"`
	// Stage is the setup step that failed (SetupError), "" otherwise.
	Stage string `json:"stage,omitempty"`
	// Field is the request or policy field at fault (InvalidError), or
	// the control the host cannot enforce (UnsupportedError).
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Fix says what would make the request work, when that is known.
	Fix string `json:"fix,omitempty"`
}

// Describe classifies err (nil for nil). The class follows errors.Is, so
// a wrapped error keeps its class; Stage, Field and Fix come from the
// outermost SetupError, InvalidError and UnsupportedError in the chain.
func Describe(err error) *ErrorInfo {
	if err == nil {
		return nil
	}
	info := &ErrorInfo{Class: ClassInternal, Message: err.Error()}
	switch {
	case errors.Is(err, ErrInvalid):
		info.Class = ClassInvalid
	case errors.Is(err, ErrUnsupported):
		info.Class = ClassUnsupported
	case errors.Is(err, ErrUnavailable):
		info.Class, info.Retryable = ClassUnavailable, true
	}
	var setup *SetupError
	if errors.As(err, &setup) {
		info.Stage = setup.Stage
	}
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		info.Field = invalid.Field
	}
	var unsupported *UnsupportedError
	if errors.As(err, &unsupported) {
		info.Field, info.Fix = unsupported.Control, unsupported.Fix
	}
	return info
}

// String is the message, with its fix when there is one ("" for nil).
func (e *ErrorInfo) String() string {
	if e == nil {
		return ""
	}
	if e.Fix != "" && !strings.Contains(e.Message, e.Fix) {
		return e.Message + " (fix: " + e.Fix + ")"
	}
	return e.Message
}
