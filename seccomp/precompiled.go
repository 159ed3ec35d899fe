package seccomp

import (
	"github.com/airlock-sandbox/airlock/policy"
)

// The default profile's program is the same for every run of one build
// and architecture: it depends only on the kill action (Options.Notify,
// the host's) and on the backend's inputs (the jail's default inside
// ids; the process backend's socket gate, on or off the host's network).
// Those programs are compiled ahead, by go generate (internal/mkdefault,
// zdefault_<arch>.go), so that a run of the default policy needs no
// libseccomp and no cache: a user without a home (daemons, CI, nobody)
// starts as fast as one with a filter cache, and the CLI, which has no
// libseccomp, never hands such a run to airlock-daemon.
// TestPrecompiledIsCompiled holds every entry to what Compile gives now.

// precompiledFilter is one default-profile program compiled ahead.
type precompiledFilter struct {
	notify bool
	// ids is true for the jail's filter (Options.IDs, both at
	// policy.DefaultInsideID, no gate), false for the process
	// backend's (no ids, the socket gate as gate says).
	ids   bool
	gate  bool
	rules int    // Profile.RuleCount
	raw   string // Program.AppendRaw
}

// Variants are the option sets a default-profile program is compiled
// ahead for, without Notify (each comes with it and without).
func Variants() []Options {
	id := uint32(policy.DefaultInsideID)
	return []Options{
		{IDs: &IDs{UID: id, GID: id}},
		{SocketGate: true},
		{},
	}
}

// Precompiled returns the default profile's filter compiled ahead for
// this build's architecture with opts (Notify included), if s is the
// default profile without rules and opts is one of Variants; else false,
// and the filter is compiled (or found in a cache) as for any policy.
func Precompiled(s policy.Seccomp, opts Options) (*Filter, bool) {
	if s.Profile != "default" || len(s.Rules) != 0 {
		return nil, false
	}
	ids := opts.IDs != nil
	if ids && (opts.SocketGate || opts.IDs.UID != policy.DefaultInsideID || opts.IDs.GID != policy.DefaultInsideID) {
		return nil, false
	}
	for _, p := range precompiled {
		if p.notify != opts.Notify || p.ids != ids || p.gate != opts.SocketGate {
			continue
		}
		prog, err := ParseRaw([]byte(p.raw))
		if err != nil {
			return nil, false // TestPrecompiledIsCompiled makes this unreachable
		}
		return &Filter{Profile: "default", Rules: p.rules, Program: prog, Notify: p.notify}, true
	}
	return nil, false
}
