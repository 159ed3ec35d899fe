package policy

import (
	"path"
	"strings"
)

// Seccomp is a policy's syscall filter: a base profile plus rules.
type Seccomp struct {
	// Profile is the base: "default" (the default: a Docker-style allow
	// list, tightened), "none" (no filter), or the absolute path of an
	// OCI or Docker seccomp JSON profile to import.
	Profile string `json:"profile,omitempty"`
	// Rules change the base. The rules given for a syscall name replace
	// every rule the base had for that name. Within the result, a denying
	// rule beats an allowing one for the same syscall.
	Rules []SyscallRule `json:"rules,omitempty"`
}

// SyscallAction is what a filter does with a matching syscall.
type SyscallAction string

const (
	ActAllow SyscallAction = "allow" // run it
	ActErrno SyscallAction = "errno" // fail it with Errno (EPERM if 0)
	ActKill  SyscallAction = "kill"  // kill the sandbox: status seccomp_violation
	ActLog   SyscallAction = "log"   // run it and log it to the kernel audit log
)

// SyscallRule applies Action to the named syscalls when every condition
// in Args holds.
type SyscallRule struct {
	Names  []string       `json:"names"`
	Action SyscallAction  `json:"action"`
	Errno  int            `json:"errno,omitempty"`
	Args   []ArgCondition `json:"args,omitempty"`
}

// ArgOp compares a syscall argument.
type ArgOp string

const (
	OpEq       ArgOp = "eq"        // arg == value
	OpNe       ArgOp = "ne"        // arg != value
	OpLt       ArgOp = "lt"        // arg < value
	OpLe       ArgOp = "le"        // arg <= value
	OpGt       ArgOp = "gt"        // arg > value
	OpGe       ArgOp = "ge"        // arg >= value
	OpMaskedEq ArgOp = "masked_eq" // arg & mask == value
)

// ArgCondition is one comparison of argument Index (0..5). All
// comparisons are on the full 64-bit argument.
type ArgCondition struct {
	Index uint   `json:"index"`
	Op    ArgOp  `json:"op"`
	Value uint64 `json:"value"`
	Mask  uint64 `json:"mask,omitempty"` // masked_eq only
}

// Validate checks the seccomp part of a policy.
func (s *Seccomp) Validate() error {
	switch {
	case s.Profile == "" || s.Profile == "default" || s.Profile == "none":
	case path.IsAbs(s.Profile):
	default:
		return Invalid("seccomp profile", "%q is not default, none or an absolute path to a JSON profile", s.Profile)
	}
	if s.Profile == "none" && len(s.Rules) > 0 {
		return Invalid("seccomp rules", "rules need a filter; profile \"none\" has none")
	}
	for _, r := range s.Rules {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks one rule.
func (r SyscallRule) Validate() error {
	if len(r.Names) == 0 {
		return Invalid("seccomp rule", "no syscall names")
	}
	for _, n := range r.Names {
		if n == "" || strings.TrimFunc(n, func(c rune) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }) != "" {
			return Invalid("seccomp rule", "bad syscall name %q", n)
		}
	}
	switch r.Action {
	case ActAllow, ActKill, ActLog:
		if r.Errno != 0 {
			return Invalid("seccomp rule", "errno is only for action errno")
		}
	case ActErrno:
		if r.Errno < 0 || r.Errno > 4095 {
			return Invalid("seccomp rule", "errno %d out of range 1..4095", r.Errno)
		}
	default:
		return Invalid("seccomp rule", "action %q is not allow, errno, kill or log", r.Action)
	}
	seen := map[uint]bool{}
	for _, a := range r.Args {
		if a.Index > 5 {
			return Invalid("seccomp rule", "argument index %d (0..5)", a.Index)
		}
		if seen[a.Index] {
			return Invalid("seccomp rule", "two conditions on argument %d in one rule: write one rule per condition", a.Index)
		}
		seen[a.Index] = true
		switch a.Op {
		case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
			if a.Mask != 0 {
				return Invalid("seccomp rule", "mask is only for op masked_eq")
			}
		case OpMaskedEq:
		default:
			return Invalid("seccomp rule", "op %q is not eq, ne, lt, le, gt, ge or masked_eq", a.Op)
		}
	}
	return nil
}
