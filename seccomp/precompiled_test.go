//go:build linux

package seccomp

import (
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	moby "github.com/moby/profiles/seccomp"
)

// Only the default profile without rules, with one of Variants' option
// sets, is compiled ahead: any other policy or option is compiled (or
// found in a cache) as before.
func TestPrecompiledOnlyDefault(t *testing.T) {
	other := uint32(0)
	for _, c := range []struct {
		s    policy.Seccomp
		o    Options
		want bool
	}{
		{policy.Seccomp{Profile: "default"}, Variants()[0], true},
		{policy.Seccomp{Profile: "default", Rules: []policy.SyscallRule{}}, Options{SocketGate: true, Notify: true}, true},
		{policy.Seccomp{Profile: "default"}, Options{}, true},
		{policy.Seccomp{Profile: "default", Rules: []policy.SyscallRule{{Names: []string{"getpid"}, Action: policy.ActKill}}}, Options{}, false},
		{policy.Seccomp{Profile: "/etc/docker.json"}, Options{}, false},
		{policy.Seccomp{Profile: "none"}, Options{}, false},
		{policy.Seccomp{Profile: "default"}, Options{IDs: &IDs{UID: other, GID: policy.DefaultInsideID}}, false},
		{policy.Seccomp{Profile: "default"}, Options{IDs: &IDs{UID: policy.DefaultInsideID, GID: other}}, false},
		{policy.Seccomp{Profile: "default"}, Options{IDs: Variants()[0].IDs, SocketGate: true}, false},
	} {
		if _, ok := Precompiled(c.s, c.o); ok != c.want {
			t.Errorf("%+v %+v: compiled ahead %v, want %v", c.s, c.o, ok, c.want)
		}
	}
}

// The default profile does not depend on the kernel it is compiled on,
// so that one program serves every host: the only kernel-conditional
// entries of Docker's profile (minKernel) allow calls the default
// profile denies outright whatever they allow (denied).
func TestDefaultProfileKernelIndependent(t *testing.T) {
	n := 0
	for _, sc := range moby.DefaultProfile().Syscalls {
		for _, f := range []*moby.Filter{sc.Includes, sc.Excludes} {
			if f == nil || f.MinKernel == nil {
				continue
			}
			n++
			for _, name := range sc.Names {
				if !slices.Contains(denied, name) {
					t.Errorf("%s depends on kernel %v in Docker's profile and is not in the default profile's denied list: the default program would differ by kernel", name, f.MinKernel)
				}
			}
		}
	}
	if n == 0 {
		t.Log("Docker's profile has no kernel-conditional entry")
	}
}
