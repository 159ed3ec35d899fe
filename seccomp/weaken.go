package seccomp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
)

// Weakenings is p.Weakenings plus, over the default profile, the
// syscalls p's rules allow (or only log) that the default profile does
// not allow unconditionally: "seccomp: allows ptrace, bpf (the default
// profile denies them)". The default profile is built only when some
// rule allows a syscall.
func Weakenings(p policy.Policy) ([]string, error) {
	w := p.Weakenings()
	if !Imported(p.Seccomp) && p.Seccomp.Profile != "none" {
		names, err := reallowed(p.Seccomp.Rules)
		if err != nil {
			return nil, err
		}
		if len(names) > 0 {
			w = append(w, fmt.Sprintf("seccomp: allows %s (the default profile does not)", strings.Join(names, ", ")))
		}
	}
	return w, nil
}

// reallowed are the names rules let through that the default profile
// does not allow unconditionally, sorted.
func reallowed(rules []policy.SyscallRule) ([]string, error) {
	var lets []string
	for _, r := range rules {
		if r.Action == policy.ActAllow || r.Action == policy.ActLog {
			lets = append(lets, r.Names...)
		}
	}
	if len(lets) == 0 {
		return nil, nil
	}
	def, err := DefaultProfile()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range lets {
		if !def.allows(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// allows reports whether p lets name through whatever its arguments: an
// unconditional allow (or log) rule and no denying rule for it, or no
// rule at all under an allowing default action.
func (p *Profile) allows(name string) bool {
	ruled, allowed := false, false
	for _, r := range p.Rules {
		if !slices.Contains(r.Names, name) {
			continue
		}
		ruled = true
		switch {
		case r.Action != policy.ActAllow && r.Action != policy.ActLog:
			return false
		case len(r.Args) == 0:
			allowed = true
		}
	}
	if !ruled {
		return p.DefaultAction == policy.ActAllow || p.DefaultAction == policy.ActLog
	}
	return allowed
}
