//go:build !cgo || !linux

package seccomp

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/policy"
)

// compilerVersion is the libseccomp version of the binary that compiles
// this one's filters, set at link time (-X) where there is one: the CLI
// scripts/build makes has no cgo and leaves its compilations to the
// airlock-daemon built beside it, whose static libseccomp this names.
// Empty for any other build without cgo.
var compilerVersion string

// CanCompile reports whether this binary compiles seccomp filters itself
// (it links libseccomp): never without cgo. Such a binary loads filters
// that were compiled before (an Executor's disk cache) and refuses to
// compile any other.
func CanCompile() bool { return false }

// compileNative fails closed: without cgo there is no libseccomp, so a
// policy that asks for a filter is refused rather than run unfiltered.
func compileNative(*plan) (Program, error) {
	if compilerVersion != "" {
		return nil, &policy.UnsupportedError{
			Control: "seccomp",
			Reason:  fmt.Sprintf("this airlock has no libseccomp: airlock-daemon (libseccomp %s) compiles its filters, and this one was not in the cache", compilerVersion),
			Fix:     "run the request with airlock-daemon, which compiles and caches the filter",
		}
	}
	return nil, &policy.UnsupportedError{
		Control: "seccomp",
		Reason:  "this airlock was built without cgo, so it has no libseccomp to compile filters",
		Fix:     "build with CGO_ENABLED=1 and libseccomp-dev installed, or use seccomp profile \"none\"",
	}
}

// LibraryVersion is the version of the libseccomp that compiles this
// binary's filters: compilerVersion, "" for a build without cgo that has
// none.
func LibraryVersion() string { return compilerVersion }

// NotifySupported reports whether filters compiled for this binary can
// use user notification: the libseccomp that compiles them is 2.5 or
// newer and the kernel has libseccomp's API level 6 (kernelAPI6), as the
// linked libseccomp itself would judge in a build with cgo.
func NotifySupported() bool {
	return versionAtLeast(compilerVersion, 2, 5) && kernelAPI6()
}
