package seccomp

import (
	"slices"

	"github.com/airlock-sandbox/airlock/policy"
)

// Profile is a resolved syscall filter: a default action and rules, in
// the policy's own terms, before compilation.
type Profile struct {
	// Name says where the profile came from ("default", a file path).
	Name string `json:"name"`
	// DefaultAction applies to every syscall no rule matches: errno
	// (DefaultErrno), kill, log or allow.
	DefaultAction policy.SyscallAction `json:"default_action"`
	DefaultErrno  int                  `json:"default_errno,omitempty"`
	// Rules, in order. A denying rule beats an allowing one for the same
	// syscall; see Compile.
	Rules []policy.SyscallRule `json:"rules"`
}

// Override replaces, for every name the given rules mention, all of the
// profile's rules for that name with the given ones.
func (p *Profile) Override(rules ...policy.SyscallRule) {
	names := map[string]bool{}
	for _, r := range rules {
		for _, n := range r.Names {
			names[n] = true
		}
	}
	kept := p.Rules[:0:0]
	for _, r := range p.Rules {
		r.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return names[n] })
		if len(r.Names) > 0 {
			kept = append(kept, r)
		}
	}
	p.Rules = append(kept, rules...)
}

// RuleCount is the number of (syscall, rule) pairs.
func (p *Profile) RuleCount() int {
	n := 0
	for _, r := range p.Rules {
		n += len(r.Names)
	}
	return n
}

func deny(errno int, names ...string) policy.SyscallRule {
	return policy.SyscallRule{Names: names, Action: policy.ActErrno, Errno: errno}
}
