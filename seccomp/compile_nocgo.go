//go:build !cgo || !linux

package seccomp

import "github.com/airlock-sandbox/airlock/policy"

// compileNative fails closed: without cgo there is no libseccomp, so a
// policy that asks for a filter is refused rather than run unfiltered.
func compileNative(*plan) (Program, error) {
	return nil, &policy.UnsupportedError{
		Control: "seccomp",
		Reason:  "this airlock was built without cgo, so it has no libseccomp to compile filters",
		Fix:     "build with CGO_ENABLED=1 and libseccomp-dev installed, or use seccomp profile \"none\"",
	}
}

// LibraryVersion is the linked libseccomp's version, "" without cgo.
func LibraryVersion() string { return "" }

// NotifySupported reports whether libseccomp can emit user notification.
func NotifySupported() bool { return false }
