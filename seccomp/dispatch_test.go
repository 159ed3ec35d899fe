//go:build linux && cgo

package seccomp

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// The dispatch tree decides exactly what libseccomp's program alone
// decided, for every syscall number of the table and past it, on every
// architecture the prefix sees, with the arguments each profile's
// conditions test and random ones; and the default profile's program
// shrinks to well under half (the load cost the tree exists for).
func TestDispatchDecidesAsLibseccomp(t *testing.T) {
	table := sysnums[runtime.GOARCH]
	nr := func(name string) string { _ = table[name]; return name }
	def := func(rules ...policy.SyscallRule) func() (*Profile, error) {
		return func() (*Profile, error) {
			p, err := DefaultProfile()
			if err == nil {
				p.Override(rules...)
			}
			return p, err
		}
	}
	fixed := func(p Profile) func() (*Profile, error) { return func() (*Profile, error) { return &p, nil } }
	var alternating []policy.SyscallRule
	for name, n := range table {
		if n%2 == 0 {
			alternating = append(alternating, policy.SyscallRule{Names: []string{name}, Action: policy.ActAllow})
		}
	}
	profiles := map[string]func() (*Profile, error){
		"default":               def(),
		"default, kill rules":   def(policy.SyscallRule{Names: []string{nr("getppid"), nr("uname")}, Action: policy.ActKill}),
		"default, allow ptrace": def(policy.SyscallRule{Names: []string{nr("ptrace")}, Action: policy.ActAllow}),
		"default, conditional allow": def(policy.SyscallRule{Names: []string{nr("kill")}, Action: policy.ActAllow,
			Args: []policy.ArgCondition{{Index: 1, Op: policy.OpEq, Value: 15}}}),
		"allow by default": fixed(Profile{Name: "t", DefaultAction: policy.ActAllow, Rules: []policy.SyscallRule{
			{Names: []string{nr("getpid")}, Action: policy.ActErrno, Errno: 22},
			{Names: []string{nr("socket")}, Action: policy.ActErrno, Errno: 97, Args: []policy.ArgCondition{{Index: 0, Op: policy.OpEq, Value: 17}}}}}),
		"kill by default": fixed(Profile{Name: "t", DefaultAction: policy.ActKill, Rules: []policy.SyscallRule{
			{Names: []string{nr("read"), nr("write"), nr("exit_group")}, Action: policy.ActAllow}}}),
		"no rules":    fixed(Profile{Name: "t", DefaultAction: policy.ActErrno, DefaultErrno: 1}),
		"alternating": fixed(Profile{Name: "t", DefaultAction: policy.ActErrno, Rules: alternating}),
	}
	arch := arches[runtime.GOARCH]
	archs := []uint32{arch.audit, auditI386, 0xc00000b7, 0}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, profile := range profiles {
		for _, notify := range []bool{false, true} {
			p, err := profile()
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Compile(p, Options{Notify: notify, libseccompOnly: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, err := Compile(p, Options{Notify: notify})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if name == "default" && !notify {
				t.Logf("default profile: %d instructions with the dispatch tree, %d with libseccomp alone", len(got), len(ref))
				if 2*len(got) > len(ref) {
					t.Errorf("the dispatch tree did not halve the default program: %d vs %d", len(got), len(ref))
				}
			}
			refVM, err := newVM(ref)
			if err != nil {
				t.Fatal(err)
			}
			gotVM, err := newVM(got)
			if err != nil {
				t.Fatal(err)
			}
			// Argument values: those the rules test, their neighbours, and
			// random ones.
			vals := []uint64{0, 1, 8, 15, 17, 0xffffffff, 1 << 32, ^uint64(0)}
			for _, r := range p.Rules {
				for _, a := range r.Args {
					vals = append(vals, a.Value, a.Value+1, a.Value-1, a.Value|0x123<<32)
				}
			}
			var nrs []uint32
			for n := uint32(0); n < 1100; n++ {
				nrs = append(nrs, n)
			}
			nrs = append(nrs, 0xffffffff, x32Bit, x32Bit|1, 0x7fffffff, 0x80000000)
			for _, a := range archs {
				for _, n := range nrs {
					for k := 0; k < 4; k++ {
						args := []uint64{vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))], rng.Uint64()}
						w, err1 := run(refVM, a, n, args)
						g, err2 := run(gotVM, a, n, args)
						if err1 != nil || err2 != nil || w != g {
							t.Fatalf("%s (notify %v): arch %#x nr %d args %#x: tree %s, libseccomp %s", name, notify, a, n, args, retName(g), retName(w))
						}
					}
				}
			}
		}
	}
}
