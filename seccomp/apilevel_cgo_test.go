//go:build cgo && linux

package seccomp

import (
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

// A binary without cgo (the CLI scripts/build makes) judges user
// notification by probing the kernel itself; airlock-daemon, which
// compiles its filters, asks libseccomp. The two must agree, or the
// filter cache keys they compute differ (they include the answer) and
// every run of the CLI misses. On this host, whatever its kernel (on a
// recent kernel both say yes, and only the host with an older one, such
// as the cgroup v2 guest's 6.1 for the flags, tests the probe's parts):
func TestKernelAPI6MatchesLibseccomp(t *testing.T) {
	api, err := libseccomp.GetAPI()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kernelAPI6(), api >= 6; got != want {
		t.Errorf("kernelAPI6() = %v, libseccomp's API level %d (6 or more: %v)", got, api, want)
	}
	if got, want := versionAtLeast(LibraryVersion(), 2, 5) && kernelAPI6(), NotifySupported(); got != want {
		t.Errorf("the probe without cgo says notify %v, libseccomp %v (version %s, API %d)", got, want, LibraryVersion(), api)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"2.5.4": true, "2.5": true, "2.4.9": false, "3.0.0": true, "10.1": true, "1.9": false, "": false, "2": false, "x.5": false, "2.y": false} {
		if got := versionAtLeast(v, 2, 5); got != want {
			t.Errorf("versionAtLeast(%q, 2, 5) = %v, want %v", v, got, want)
		}
	}
}
