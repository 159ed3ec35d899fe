package seccomp

import (
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// Each way a policy can be weaker than the default is named; the default
// policy, and rules that only tighten or allow what the default allows,
// name nothing.
func TestWeakenings(t *testing.T) {
	allow := func(names ...string) policy.SyscallRule {
		return policy.SyscallRule{Names: names, Action: policy.ActAllow}
	}
	for _, c := range []struct {
		name string
		mod  func(*policy.Policy)
		want []string // substrings, one per weakening, in order
	}{
		{"default", func(*policy.Policy) {}, nil},
		{"tightening rules", func(p *policy.Policy) {
			p.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"getpid"}, Action: policy.ActKill}, allow("read", "write")}
		}, nil},
		{"loopback and a read-only bind", func(p *policy.Policy) {
			p.Net = policy.NetLoopback
			p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: "/srv", Target: "/srv"}}
		}, nil},
		{"seccomp off", func(p *policy.Policy) { p.Seccomp.Profile = "none" }, []string{"seccomp: off"}},
		{"imported", func(p *policy.Policy) { p.Seccomp.Profile = "/etc/x.json" }, []string{"imported profile /etc/x.json"}},
		{"host net", func(p *policy.Policy) { p.Net = policy.NetHost }, []string{"net: host"}},
		{"process backend", func(p *policy.Policy) { p.Backend = "process" }, []string{"backend: process"}},
		{"writable /", func(p *policy.Policy) {
			p.Mounts = []policy.Mount{{Type: policy.MountBind, Source: "/", Target: "/host"}}
		}, []string{"host / writable at /host"}},
		{"readable /", func(p *policy.Policy) {
			p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: "/", Target: "/host"}}
		}, []string{"whole / readable at /host"}},
		{"re-allowed", func(p *policy.Policy) {
			p.Seccomp.Rules = []policy.SyscallRule{allow("ptrace", "read"), allow("mount"), {Names: []string{"bpf"}, Action: policy.ActLog}, allow("ioctl"), allow("clone3")}
		}, []string{"allows bpf, clone3, ioctl, mount, ptrace (the default"}},
	} {
		p := policy.Default()
		c.mod(&p)
		got, err := Weakenings(p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.want) || !slices.EqualFunc(got, c.want, strings.Contains) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
