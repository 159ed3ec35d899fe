package executor

import (
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// A pool recycles only under the default profile, and only while what a
// reset cannot undo stays denied: a rule for any call the default profile
// denies (keyrings, namespaces, mounts), for clone, or for a call the
// recycling reaper makes turns it off, as does another profile.
func TestMayRecycle(t *testing.T) {
	rule := func(name string, a policy.SyscallAction) policy.Seccomp {
		return policy.Seccomp{Rules: []policy.SyscallRule{{Names: []string{name}, Action: a}}}
	}
	for _, c := range []struct {
		name string
		s    policy.Seccomp
		want bool
	}{
		{"default", policy.Seccomp{}, true},
		{"default, named", policy.Seccomp{Profile: "default"}, true},
		{"a kill rule for mkdir", rule("mkdir", policy.ActKill), true},
		{"no filter", policy.Seccomp{Profile: "none"}, false},
		{"an imported profile", policy.Seccomp{Profile: "/etc/profile.json"}, false},
		{"keyctl allowed", rule("keyctl", policy.ActAllow), false},
		{"unshare allowed", rule("unshare", policy.ActAllow), false},
		{"a rule for clone", rule("clone", policy.ActAllow), false},
		{"a rule for a call the reaper makes", rule("getdents64", policy.ActErrno), false},
	} {
		if got := mayRecycle(c.s); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
