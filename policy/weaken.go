package policy

import (
	"fmt"
	"strings"
)

// Weakenings lists each way p is weaker than the default policy, one
// phrase each, for the result's enforced.weakened, the CLI's warning and
// `airlock policy validate`: a policy may mean to be weaker (that is not
// refused), but never silently. The seccomp rules that allow what the
// default profile denies are seccomp.Weakenings' to add: this package
// does not know the default profile.
func (p Policy) Weakenings() []string {
	var w []string
	switch p.Seccomp.Profile {
	case "", "default":
	case "none":
		w = append(w, "seccomp: off (profile none)")
	default:
		w = append(w, fmt.Sprintf("seccomp: the imported profile %s replaces the default profile (not compared)", p.Seccomp.Profile))
	}
	if p.Net == NetHost {
		w = append(w, "net: host (the host's network namespace)")
	}
	if p.Net == NetAllow {
		w = append(w, "net: allow "+strings.Join(p.Egress.Allow, ",")+" (through the supervisor's proxy)")
	}
	if p.Backend == "process" {
		w = append(w, "backend: process (no namespaces: the host's processes, and its filesystem and network as far as Landlock and the seccomp filter's socket gate, where the host has them, do not confine them)")
	}
	for _, m := range p.Mounts {
		switch {
		case m.Type == MountBind:
			w = append(w, fmt.Sprintf("mounts: host %s writable at %s", m.Source, m.Target))
		case m.Type == MountROBind && m.Source == "/":
			w = append(w, fmt.Sprintf("mounts: the host's whole / readable at %s", m.Target))
		}
	}
	return w
}
