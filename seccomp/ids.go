package seccomp

import (
	"fmt"
	"slices"

	"golang.org/x/net/bpf"
)

// IDs are the only uid and gid a sandbox's user namespace maps (the
// jail's: one of each). The kernel answers a change to any other id with
// EINVAL, its word for an id that has no mapping, where bare an
// unprivileged process gets EPERM (and programs test for EPERM or
// EACCES: CPython's test_subprocess and test_os do). With Options.IDs
// the filter answers EPERM first for the id-changing calls whose id
// arguments are neither the mapped id nor -1 ("leave it"), as a non-root
// user's would be answered bare; a change to the mapped ids, and -1, go
// on to the kernel as before.
//
// The kernel reads each id as a 32-bit uid_t or gid_t, so the filter
// compares the argument's low 32 bits only. setfsuid and setfsgid are
// left alone: they never fail, bare or inside, and answer the old id.
// setgroups is left alone too: without CAP_SETGID the kernel refuses it
// with EPERM before it looks at a group.
type IDs struct {
	UID, GID uint32
}

// idArg is one id argument of an id-changing call: its index, and
// whether it is a gid.
type idArg struct {
	index int
	gid   bool
}

// idSyscalls are the calls IDs confines, with their id arguments.
var idSyscalls = []struct {
	name string
	args []idArg
}{
	{"setuid", []idArg{{0, false}}},
	{"setgid", []idArg{{0, true}}},
	{"setreuid", []idArg{{0, false}, {1, false}}},
	{"setregid", []idArg{{0, true}, {1, true}}},
	{"setresuid", []idArg{{0, false}, {1, false}, {2, false}}},
	{"setresgid", []idArg{{0, true}, {1, true}, {2, true}}},
	{"chown", []idArg{{1, false}, {2, true}}},
	{"lchown", []idArg{{1, false}, {2, true}}},
	{"fchown", []idArg{{1, false}, {2, true}}},
	{"fchownat", []idArg{{2, false}, {3, true}}},
}

// idRule is one id-changing call the prefix checks: its number, and each
// id argument with the one id it may name (besides -1).
type idRule struct {
	nr   uint32
	args []idCheck
}

type idCheck struct {
	index int
	id    uint32
}

// idRules are the calls of table that ids confines, sorted by number:
// each one the profile allows unconditionally (a call it denies, kills
// or conditions keeps the profile's answer alone).
func idRules(ids *IDs, table map[string]uint32, byNr map[uint32][]rule) []idRule {
	if ids == nil {
		return nil
	}
	var out []idRule
	for _, s := range idSyscalls {
		nr, ok := table[s.name]
		if !ok || !plainAllow(byNr[nr]) {
			continue
		}
		r := idRule{nr: nr}
		for _, a := range s.args {
			id := ids.UID
			if a.gid {
				id = ids.GID
			}
			r.args = append(r.args, idCheck{a.index, id})
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b idRule) int { return int(a.nr) - int(b.nr) })
	return out
}

// plainAllow reports whether rs allow their syscall whatever its
// arguments, and deny it never.
func plainAllow(rs []rule) bool {
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if len(r.args) > 0 || !allowing(r.ret) {
			return false
		}
	}
	return true
}

// idBlocks is the prefix's id section: for a call in rules whose id
// arguments are not all their mapped id or -1, ERRNO(EPERM); for
// anything else it falls through with the syscall number in A, as it
// found it. The calls are grouped into clusters of near numbers, each
// behind a range test, so that the calls a program makes most (read,
// write, futex, ...) pass in a few instructions.
//
//	ld nr
//	cluster: nr < lo -> end; nr > hi -> next cluster
//	         nr == N -> N's block ...; -> end
//	block:   for each id argument: ld its low word;
//	         == id -> next; == 0xffffffff -> next; return EPERM
//	         -> end
//	end:     ld nr
func idBlocks(rules []idRule) ([]bpf.Instruction, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	const gap = 8 // numbers further apart start a new cluster
	var clusters [][]idRule
	for i, r := range rules {
		if i == 0 || r.nr-rules[i-1].nr > gap {
			clusters = append(clusters, nil)
		}
		clusters[len(clusters)-1] = append(clusters[len(clusters)-1], r)
	}
	// Jumps are emitted with symbolic targets and fixed at the end:
	// toEnd to the final load, toNext to the next cluster's first
	// instruction (or the end), toBlock to a call's block.
	type fix struct {
		at    int
		kind  int // toEnd, toNext or toBlock
		block int
		next  int // the cluster after this one
	}
	const (
		toEnd = iota
		toNext
		toBlock
	)
	var p []bpf.Instruction
	var fixes []fix
	jump := func(cond bpf.JumpTest, val uint32, kind, block, next int) {
		fixes = append(fixes, fix{at: len(p), kind: kind, block: block, next: next})
		p = append(p, bpf.JumpIf{Cond: cond, Val: val})
	}
	p = append(p, bpf.LoadAbsolute{Off: offNr, Size: 4})
	clusterAt := make([]int, len(clusters)+1)
	block := 0
	for c, rs := range clusters {
		clusterAt[c] = len(p)
		jump(bpf.JumpLessThan, rs[0].nr, toEnd, 0, 0)
		jump(bpf.JumpGreaterThan, rs[len(rs)-1].nr, toNext, 0, c+1)
		for _, r := range rs {
			jump(bpf.JumpEqual, r.nr, toBlock, block, 0)
			block++
		}
		fixes = append(fixes, fix{at: len(p), kind: toEnd})
		p = append(p, bpf.Jump{})
	}
	blockAt := make([]int, 0, block)
	for _, rs := range clusters {
		for _, r := range rs {
			blockAt = append(blockAt, len(p))
			for _, a := range r.args {
				// Two tests pass the argument: the mapped id (skip the
				// -1 test and the return), or -1 (skip the return).
				p = append(p, bpf.LoadAbsolute{Off: offArgs + 8*uint32(a.index), Size: 4},
					bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.id, SkipTrue: 2},
					bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffff, SkipTrue: 1},
					bpf.RetConstant{Val: retErrno | 1})
			}
			fixes = append(fixes, fix{at: len(p), kind: toEnd})
			p = append(p, bpf.Jump{})
		}
	}
	end := len(p)
	clusterAt[len(clusters)] = end
	p = append(p, bpf.LoadAbsolute{Off: offNr, Size: 4})
	for _, f := range fixes {
		target := end
		switch f.kind {
		case toNext:
			target = clusterAt[f.next]
		case toBlock:
			target = blockAt[f.block]
		}
		skip := target - f.at - 1
		switch in := p[f.at].(type) {
		case bpf.JumpIf:
			if skip > 255 {
				return nil, fmt.Errorf("seccomp: the id section is too long for a conditional jump (%d)", skip)
			}
			in.SkipTrue = uint8(skip)
			p[f.at] = in
		case bpf.Jump:
			in.Skip = uint32(skip)
			p[f.at] = in
		}
	}
	return p, nil
}
