package seccomp

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/net/bpf"
)

// Seccomp return values (linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retUserNotif   = 0x7fc00000
	retLog         = 0x7ffc0000
	retAllow       = 0x7fff0000
	enosys         = 38
	// x32 syscalls are x86_64 numbers with this bit set.
	x32Bit = 0x40000000
)

// archInfo is what the compiler needs to know of the native arch.
type archInfo struct {
	audit uint32 // AUDIT_ARCH_*
	x32   bool   // has the x32 ABI's number space to refuse
}

var arches = map[string]archInfo{
	"amd64": {audit: 0xc000003e, x32: true},
	"arm64": {audit: 0xc00000b7},
}

// Options change how a profile compiles.
type Options struct {
	// Notify compiles kill actions as SECCOMP_RET_USER_NOTIF, so the
	// supervisor learns the syscall's name before it kills the sandbox
	// (the loader must then ask for a listener). false = KILL_PROCESS.
	Notify bool

	// IDs, when set, answers EPERM for a change to an id the sandbox's
	// user namespace does not map (see IDs). nil for a sandbox without
	// one (the process backend), where every host id is mapped.
	IDs *IDs

	// SocketGate puts the socket gate (socketGate) first, before every
	// rule of the profile: socket() is refused with SocketErrno but for
	// TCP over IPv4 and IPv6, socketpair() but for unix stream and
	// seqpacket pairs, listen() always, and a send with MSG_FASTOPEN
	// with FastOpenErrno. For the process backend off the host's
	// network, whose Landlock ruleset confines TCP's bind and connect
	// only: every other socket (UDP, unix, netlink, packet, ...), and the
	// two TCP paths Landlock does not check (listen's own bind, Fast
	// Open's connect), would reach the host. The profile's own rules
	// still decide what the gate lets through.
	SocketGate bool

	// libseccompOnly compiles every rule with libseccomp, with the
	// unknown-number ranges in the prefix, as before the dispatch tree:
	// the reference the tests compare the tree against.
	libseccompOnly bool
}

// rule is a profile rule resolved to one syscall number and a return value.
type rule struct {
	nr   uint32
	ret  uint32
	args []policy.ArgCondition
}

// plan is the compilation of a profile before code generation: what
// libseccomp compiles, and what airlock's own prefix checks first.
type plan struct {
	arch       archInfo
	defaultRet uint32
	native     []rule   // for libseccomp
	overrides  []rule   // conditional denials of allowed syscalls, checked first
	ids        []idRule // id-changing calls to an unmapped id (Options.IDs), checked after them
	maxKnown   uint32
	gaps       [][2]uint32 // unknown numbers below maxKnown
	known      map[uint32]bool
	stub       bool // ENOSYS for unknown numbers
	// foreign is the action for a non-native arch or an x32 number,
	// returned by the prefix: KILL_PROCESS, or USER_NOTIF with Notify so
	// that the supervisor can name the ABI and number before it kills.
	foreign uint32
	// gate is the socket gate (Options.SocketGate), nil without it.
	gate []bpf.Instruction
}

// ErrUnknownSyscall is wrapped by compile errors for a deny rule naming a
// syscall this architecture does not have.
var ErrUnknownSyscall = fmt.Errorf("unknown syscall")

// makePlan resolves names to numbers and settles precedence, which
// libseccomp does not: given an unconditional allow for a syscall it
// silently drops conditional denials of the same syscall. So, per
// syscall: an unconditional denial wins outright; conditional denials of
// a syscall that has any allowing rule are checked in airlock's prefix,
// before libseccomp's program; the rest goes to libseccomp.
func makePlan(p *Profile, goarch string, opts Options) (*plan, error) {
	arch, ok := arches[goarch]
	table := sysnums[goarch]
	if !ok || table == nil {
		return nil, &policy.UnsupportedError{Control: "seccomp", Reason: "no syscall table for " + goarch, Fix: "run on amd64 or arm64"}
	}
	pl := &plan{arch: arch, foreign: retKillProcess}
	if opts.Notify {
		pl.foreign = retUserNotif
	}
	var err error
	if pl.defaultRet, err = retValue(p.DefaultAction, p.DefaultErrno, opts); err != nil {
		return nil, err
	}
	byNr := map[uint32][]rule{}
	var order []uint32
	for _, r := range p.Rules {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		ret, err := retValue(r.Action, r.Errno, opts)
		if err != nil {
			return nil, err
		}
		for _, name := range r.Names {
			nr, ok := table[name]
			if !ok {
				if r.Action == policy.ActAllow || r.Action == policy.ActLog {
					continue // not on this arch: the default denies it anyway
				}
				// Invalid (the policy must be fixed) and ErrUnknownSyscall.
				return nil, fmt.Errorf("%w: %w", policy.Invalid("seccomp rule", "unknown syscall %q in a %s rule (not a %s syscall)", name, r.Action, goarch), ErrUnknownSyscall)
			}
			if _, seen := byNr[nr]; !seen {
				order = append(order, nr)
			}
			byNr[nr] = append(byNr[nr], rule{nr: nr, ret: ret, args: r.Args})
		}
	}
	for _, nr := range order {
		pl.settle(byNr[nr])
	}
	pl.ids = idRules(opts.IDs, table, byNr)
	for _, nr := range table {
		pl.maxKnown = max(pl.maxKnown, nr)
	}
	pl.gaps = gaps(table)
	pl.known = make(map[uint32]bool, len(table))
	for _, nr := range table {
		pl.known[nr] = true
	}
	pl.stub = p.DefaultAction != policy.ActAllow && p.DefaultAction != policy.ActLog
	if opts.SocketGate {
		if pl.gate, err = socketGate(table); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

func allowing(ret uint32) bool { return ret == retAllow || ret == retLog }

// settle applies the precedence rules to the rules of one syscall.
func (pl *plan) settle(rs []rule) {
	var uncondAllow *rule
	anyAllow := false
	for i, r := range rs {
		if len(r.args) == 0 && !allowing(r.ret) {
			if r.ret != pl.defaultRet {
				pl.native = append(pl.native, r)
			}
			return // an unconditional denial wins
		}
		if allowing(r.ret) {
			anyAllow = true
			if len(r.args) == 0 && uncondAllow == nil {
				uncondAllow = &rs[i]
			}
		}
	}
	for _, r := range rs {
		switch {
		case !allowing(r.ret) && anyAllow:
			pl.overrides = append(pl.overrides, r)
		case !allowing(r.ret):
			if r.ret != pl.defaultRet {
				pl.native = append(pl.native, r)
			}
		case uncondAllow != nil:
			// subsumed by the unconditional allow below
		case r.ret != pl.defaultRet:
			pl.native = append(pl.native, r)
		}
	}
	if uncondAllow != nil && uncondAllow.ret != pl.defaultRet {
		pl.native = append(pl.native, *uncondAllow)
	}
}

func retValue(a policy.SyscallAction, errno int, opts Options) (uint32, error) {
	switch a {
	case policy.ActAllow:
		return retAllow, nil
	case policy.ActLog:
		return retLog, nil
	case policy.ActErrno:
		if errno == 0 {
			errno = 1 // EPERM
		}
		return retErrno | uint32(errno), nil
	case policy.ActKill:
		if opts.Notify {
			return retUserNotif, nil
		}
		return retKillProcess, nil
	}
	return 0, policy.Invalid("seccomp action", "%q", a)
}

// gaps returns the ranges of numbers below the highest known syscall that
// name no syscall.
func gaps(table map[string]uint32) [][2]uint32 {
	nrs := make([]uint32, 0, len(table))
	for _, nr := range table {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	var g [][2]uint32
	for i := 1; i < len(nrs); i++ {
		if nrs[i] > nrs[i-1]+1 {
			g = append(g, [2]uint32{nrs[i-1] + 1, nrs[i] - 1})
		}
	}
	return g
}

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// prefix generates airlock's own checks, which run first. They fall
// through to the dispatch (or, without one, to libseccomp's program) for
// everything they do not decide; toLib are the indexes of the jumps to
// libseccomp's program, for Compile to patch. A non-native arch or an x32
// number never reaches the rest: the prefix returns pl.foreign
// (libseccomp's own bad-arch check, KILL_PROCESS, stays behind it as a
// second line).
//
//	ld arch; arch != native -> foreign           (kill, or notify to name it)
//	ld nr;   nr == -1       -> libseccomp        (amd64: a tracer's skip, ENOSYS)
//	         nr & x32 bit   -> foreign           (amd64)
//	socket not TCP, socketpair not unix stream, listen -> ERRNO(EACCES)
//	send* with MSG_FASTOPEN -> ERRNO(EOPNOTSUPP) (SocketGate)
//	nr in a gap or > max    -> ERRNO(ENOSYS)     (withGaps; else the dispatch's)
//	nr == N && args match   -> deny              (override rules)
//	nr sets an unmapped id  -> ERRNO(EPERM)      (Options.IDs; ids.go)
//	-> the dispatch, or libseccomp
func (pl *plan) prefix(withGaps bool) (p []bpf.Instruction, toLib []int, err error) {
	foreign := bpf.RetConstant{Val: pl.foreign}

	p = append(p, bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: pl.arch.audit, SkipTrue: 1}, foreign)
	if pl.stub || pl.arch.x32 {
		p = append(p, bpf.LoadAbsolute{Off: offNr, Size: 4})
	}
	if pl.arch.x32 {
		// -1 has the x32 bit too: it is what a tracer sets to skip a
		// call, and libseccomp lets it through to fail with ENOSYS.
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffff, SkipFalse: 1})
		toLib = append(toLib, len(p))
		p = append(p, bpf.Jump{},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipFalse: 1}, foreign)
	}
	// After the arch and x32 checks (the numbers it compares are the
	// native ones), before everything that could allow a socket. It
	// leaves the number loaded, as the gaps below expect.
	p = append(p, pl.gate...)
	if pl.stub && withGaps {
		ret := bpf.RetConstant{Val: retErrno | enosys}
		for _, g := range pl.gaps {
			p = append(p, bpf.JumpIf{Cond: bpf.JumpLessThan, Val: g[0], SkipTrue: 2},
				bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: g[1], SkipTrue: 1}, ret)
		}
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: pl.maxKnown, SkipFalse: 1}, ret)
	}
	for _, r := range pl.overrides {
		block, err := overrideBlock(r)
		if err != nil {
			return nil, nil, err
		}
		p = append(p, block...)
	}
	ids, err := idBlocks(pl.ids)
	if err != nil {
		return nil, nil, err
	}
	p = append(p, ids...)
	return p, toLib, nil
}

// overrideBlock returns "if nr == r.nr and every condition holds: return
// r.ret", falling through otherwise. All jumps stay inside the block.
func overrideBlock(r rule) ([]bpf.Instruction, error) {
	// Each condition is emitted with jumps to "fail" (the block's end) as
	// placeholders, fixed once the block's length is known.
	type jump struct {
		at     int
		onTrue bool
	}
	var b []bpf.Instruction
	var fails []jump
	fail := func(cond bpf.JumpTest, val uint32, onTrue bool) {
		fails = append(fails, jump{len(b), onTrue})
		b = append(b, bpf.JumpIf{Cond: cond, Val: val})
	}
	b = append(b, bpf.LoadAbsolute{Off: offNr, Size: 4})
	fail(bpf.JumpNotEqual, r.nr, true)
	for _, a := range r.args {
		lo, hi := offArgs+8*uint32(a.Index), offArgs+8*uint32(a.Index)+4
		vlo, vhi := uint32(a.Value), uint32(a.Value>>32)
		switch a.Op {
		case policy.OpEq, policy.OpMaskedEq:
		default:
			// Only equality tests are needed to override an allow
			// (TIOCSTI-style); the others would need 64-bit range logic
			// that libseccomp, not this prefix, should own.
			return nil, policy.Invalid("seccomp rule", "a conditional %s rule for a syscall another rule allows may only use eq or masked_eq (got %s)", "deny", a.Op)
		}
		mask := ^uint64(0)
		if a.Op == policy.OpMaskedEq {
			mask = a.Mask
		}
		for _, w := range []struct{ off, m, v uint32 }{{hi, uint32(mask >> 32), vhi}, {lo, uint32(mask), vlo}} {
			if w.m == 0 {
				if w.v != 0 {
					return nil, policy.Invalid("seccomp rule", "masked_eq value has bits outside its mask")
				}
				continue
			}
			b = append(b, bpf.LoadAbsolute{Off: w.off, Size: 4})
			if w.m != 0xffffffff {
				b = append(b, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: w.m})
			}
			fail(bpf.JumpNotEqual, w.v, true)
		}
	}
	b = append(b, bpf.RetConstant{Val: r.ret})
	for _, j := range fails {
		ji := b[j.at].(bpf.JumpIf)
		skip := len(b) - j.at - 1
		if skip > 255 {
			return nil, fmt.Errorf("seccomp: override block too long")
		}
		ji.SkipTrue = uint8(skip)
		b[j.at] = ji
	}
	return b, nil
}

// libAction marks a syscall number whose rules have argument conditions:
// the dispatch sends it on to libseccomp's program.
const libAction = 1 << 32

// dispatch generates the syscall-number dispatch that follows the prefix:
// every number's action when it does not depend on the arguments (the
// rule's, the default, or ENOSYS for a number this table does not know),
// as a binary search over the ranges of numbers that share one, and a
// jump to libseccomp's program for the numbers whose rules have argument
// conditions. It returns the instructions, the indexes of its jumps to
// libseccomp, and the rules libseccomp still compiles (those with
// conditions).
//
// Why: the kernel's cost of loading a filter (its checks, the JIT and the
// per-number action cache) grows with its length, and it is paid on every
// start, warm ones included. libseccomp compares numbers one by one; the
// default profile's ~300 allowed numbers make 74 ranges, and the program
// shrinks from 438 instructions to about 150.
//
// ok is false when the tree's jumps would not fit BPF's 8-bit conditional
// offsets (a profile with hundreds of alternating ranges): the caller
// then compiles everything with libseccomp, as it did before.
func (pl *plan) dispatch() (p []bpf.Instruction, toLib []int, lib []rule, ok bool) {
	cond := map[uint32]bool{}
	for _, r := range pl.native {
		if len(r.args) > 0 {
			cond[r.nr] = true
		}
	}
	action := map[uint32]uint64{}
	for _, r := range pl.native {
		if cond[r.nr] {
			lib = append(lib, r)
			action[r.nr] = libAction
		} else {
			action[r.nr] = uint64(r.ret) // settle leaves one rule per number
		}
	}
	// Unknown numbers: ENOSYS with a stub; otherwise what libseccomp says,
	// the default action below the table's end, and past it libseccomp's
	// own program decides (on amd64 it kills numbers from the x32 bit up).
	unknown, past := uint64(pl.defaultRet), uint64(libAction)
	if pl.stub {
		unknown, past = retErrno|enosys, retErrno|enosys
	}
	of := func(nr uint32) uint64 {
		switch a, ok := action[nr]; {
		case ok:
			return a
		case !pl.known[nr]:
			return unknown
		}
		return uint64(pl.defaultRet)
	}
	// The ranges: each starts at lo and ends where the next begins; the
	// last one runs to 2^32-1 (numbers past the table are unknown).
	type span struct {
		lo  uint32
		act uint64
	}
	var spans []span
	for nr := uint32(0); nr <= pl.maxKnown+1; nr++ {
		a := of(nr)
		if nr > pl.maxKnown {
			a = past
		}
		if len(spans) == 0 || spans[len(spans)-1].act != a {
			spans = append(spans, span{nr, a})
		}
	}
	// The tree, with symbolic targets: a node (its index) or a leaf (one
	// instruction per distinct action, placed after the nodes).
	type target struct {
		node, leaf int // node >= 0, or leaf >= 0
	}
	type node struct {
		lo     uint32
		jt, jf target
	}
	var nodes []node
	var leaves []uint64
	leafOf := map[uint64]int{}
	var build func(s []span) target
	build = func(s []span) target {
		if len(s) == 1 {
			i, seen := leafOf[s[0].act]
			if !seen {
				i = len(leaves)
				leafOf[s[0].act] = i
				leaves = append(leaves, s[0].act)
			}
			return target{node: -1, leaf: i}
		}
		m := len(s) / 2
		i := len(nodes)
		nodes = append(nodes, node{lo: s[m].lo})
		nodes[i].jf = build(s[:m]) // A < lo
		nodes[i].jt = build(s[m:]) // A >= lo
		return target{node: i, leaf: -1}
	}
	root := build(spans)
	// Layout: ld nr; the nodes in order; the leaves.
	pos := func(t target) int {
		if t.node >= 0 {
			return 1 + t.node
		}
		return 1 + len(nodes) + t.leaf
	}
	p = append(p, bpf.LoadAbsolute{Off: offNr, Size: 4})
	if root.node < 0 {
		p = append(p, bpf.Jump{}) // one range: straight to its leaf
	}
	for i, n := range nodes {
		jt, jf := pos(n.jt)-(1+i)-1, pos(n.jf)-(1+i)-1
		if jt > 255 || jf > 255 {
			return nil, nil, nil, false
		}
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: n.lo, SkipTrue: uint8(jt), SkipFalse: uint8(jf)})
	}
	for _, a := range leaves {
		if a == libAction {
			toLib = append(toLib, len(p))
			p = append(p, bpf.Jump{}) // patched by Compile
			continue
		}
		p = append(p, bpf.RetConstant{Val: uint32(a)})
	}
	return p, toLib, lib, true
}

// Compile compiles p for the native architecture into a program ready to
// load: airlock's prefix (arch and x32 checks, denial overrides), the
// dispatch on the syscall number (ENOSYS for unknown and newer syscalls,
// every action that does not depend on arguments), then libseccomp's
// program for the rules with argument conditions (binary-tree optimised,
// KILL_PROCESS for a bad arch).
func Compile(p *Profile, opts Options) (Program, error) {
	pl, err := makePlan(p, runtime.GOARCH, opts)
	if err != nil {
		return nil, err
	}
	var tree []bpf.Instruction
	var treeLib []int
	lib, ok := pl.native, false
	if !opts.libseccompOnly {
		if tree, treeLib, lib, ok = pl.dispatch(); !ok {
			lib = pl.native
		}
	}
	pre, toLib, err := pl.prefix(!ok)
	if err != nil {
		return nil, err
	}
	for _, i := range treeLib {
		toLib = append(toLib, len(pre)+i)
	}
	all := append(pre, tree...)
	for _, i := range toLib {
		all[i] = bpf.Jump{Skip: uint32(len(all) - i - 1)}
	}
	head, err := Assemble(all)
	if err != nil {
		return nil, err
	}
	native := *pl
	native.native = lib
	body, err := compileNative(&native)
	if err != nil {
		return nil, err
	}
	prog := append(head, body...)
	if len(prog) > MaxInstructions {
		return nil, policy.Invalid("seccomp", "filter of %d instructions is over the kernel's %d", len(prog), MaxInstructions)
	}
	return prog, nil
}

// Disassemble renders p one instruction a line.
func Disassemble(p Program) []string {
	out := make([]string, len(p))
	for i, in := range p {
		ins := bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
		out[i] = fmt.Sprintf("%4d: %v", i, ins)
		if r, ok := ins.(bpf.RetConstant); ok {
			out[i] += "\t; " + retName(r.Val)
		}
	}
	return out
}

// retName names a seccomp return value.
func retName(ret uint32) string {
	switch {
	case ret == retAllow:
		return "ALLOW"
	case ret == retLog:
		return "LOG"
	case ret == retKillProcess:
		return "KILL_PROCESS"
	case ret == retUserNotif:
		return "USER_NOTIF (kill)"
	case ret&0xffff0000 == retErrno:
		return fmt.Sprintf("ERRNO(%d)", ret&0xffff)
	}
	return fmt.Sprintf("%#x", ret)
}
