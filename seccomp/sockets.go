package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// SocketErrno is what the socket gate (Options.SocketGate) answers a
// socket it refuses: EACCES, socket(2)'s "permission to create a socket
// of the specified type and/or protocol is denied", the errno an LSM's
// refusal gives (and Landlock's of a TCP connect, on the same backend),
// which programs treat as "not here" (glibc's lookups fall back, Python
// raises PermissionError); not EPERM, the default profile's, nor
// EAFNOSUPPORT, which would tell a program the kernel lacks AF_INET.
const SocketErrno = 13

// FastOpenErrno is what the gate answers a send with MSG_FASTOPEN:
// EOPNOTSUPP, the kernel's own answer where TCP Fast Open is off, on
// which a program connects first instead (and Landlock judges that
// connect).
const FastOpenErrno = 95

// Linux's values (the same on amd64 and arm64; written out, as enosys
// is, so that the compiler builds on every OS).
const (
	afUnix        = 1
	afInet        = 2
	afInet6       = 10
	sockStream    = 1
	sockSeqpacket = 5
	ipprotoTCP    = 6
	msgFastOpen   = 0x20000000
	// socketFlags are the flags socket(2) and socketpair(2) take in
	// their type argument (SOCK_NONBLOCK, SOCK_CLOEXEC); the gate
	// compares the type with them masked off.
	socketFlags = 0x800 | 0x80000
)

// gateInsn is an instruction of the gate with symbolic jump targets:
// the index of a label, resolved by assemble.
type gateInsn struct {
	in      bpf.Instruction // when not a conditional jump
	label   string          // this entry is a label, no instruction
	isCondJ bool
	cond    bpf.JumpTest
	val     uint32
	jt, jf  string // labels of a conditional jump; "" = the next instruction
}

// socketGate is the socket gate (Options.SocketGate), for the prefix:
//
//	socket(family, type, protocol): allowed (falls through to the rest of
//	  the filter) only for family AF_INET or AF_INET6, type SOCK_STREAM
//	  (its SOCK_NONBLOCK and SOCK_CLOEXEC flags masked off), protocol 0 or
//	  IPPROTO_TCP: TCP, which Landlock's network rules confine. Anything
//	  else is ERRNO(SocketErrno): UDP, raw and ICMP sockets, SCTP and
//	  MPTCP (other protocols of a stream socket), AF_UNIX (Landlock does
//	  not check a connect to a pathname socket), AF_NETLINK, AF_PACKET,
//	  AF_VSOCK, AF_ALG and every other family.
//	socketpair(family, type, ...): allowed only for AF_UNIX with type
//	  SOCK_STREAM or SOCK_SEQPACKET (flags masked): a connected pair that
//	  can reach nothing else (connect is EISCONN, an address on send is
//	  refused or ignored). A datagram pair is refused, since sendto and
//	  connect on it take any host socket's path, and so is every other
//	  family (AF_TIPC has pairs too).
//	listen(): ERRNO(SocketErrno). On a TCP socket that bind did not
//	  bind (Landlock refuses that bind) listen binds a port itself, on
//	  every address, and Landlock does not check it: the program would
//	  serve the host's network. No socket the gate lets be made can
//	  listen otherwise.
//	sendto(), sendmsg(), sendmmsg() with MSG_FASTOPEN in their flags:
//	  ERRNO(FastOpenErrno). Fast Open connects from within the send,
//	  where Landlock does not check the connect.
//
// Every argument is compared on all 64 bits, as the rest of the filter
// does (any high bit set is refused). It ends with the syscall number
// loaded again, for what follows.
func socketGate(table map[string]uint32) ([]bpf.Instruction, error) {
	nr := map[string]uint32{}
	for _, name := range []string{"socket", "socketpair", "listen", "sendto", "sendmsg", "sendmmsg"} {
		n, ok := table[name]
		if !ok {
			return nil, fmt.Errorf("seccomp: no %s in this arch's syscall table", name)
		}
		nr[name] = n
	}
	var g []gateInsn
	ld := func(off uint32) { g = append(g, gateInsn{in: bpf.LoadAbsolute{Off: off, Size: 4}}) }
	jump := func(cond bpf.JumpTest, val uint32, jt, jf string) {
		g = append(g, gateInsn{isCondJ: true, cond: cond, val: val, jt: jt, jf: jf})
	}
	label := func(name string) { g = append(g, gateInsn{label: name}) }
	ins := func(in bpf.Instruction) { g = append(g, gateInsn{in: in}) }
	lo := func(arg uint32) uint32 { return offArgs + 8*arg }
	hi := func(arg uint32) uint32 { return offArgs + 8*arg + 4 }
	// hiZero: argument arg's high word must be 0, or the call is refused.
	hiZero := func(arg uint32) { ld(hi(arg)); jump(bpf.JumpEqual, 0, "", "deny") }
	// maskedType loads arg 1's low word with the flags masked off.
	maskedType := func() { ld(lo(1)); ins(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: ^uint32(socketFlags)}) }

	ld(offNr)
	jump(bpf.JumpEqual, nr["socket"], "socket", "")
	jump(bpf.JumpEqual, nr["socketpair"], "pair", "")
	jump(bpf.JumpEqual, nr["listen"], "deny", "")
	jump(bpf.JumpEqual, nr["sendto"], "flags3", "")
	jump(bpf.JumpEqual, nr["sendmmsg"], "flags3", "")
	jump(bpf.JumpEqual, nr["sendmsg"], "flags2", "out")

	// The flags are an unsigned int: the kernel reads the low word only.
	label("flags3")
	ld(lo(3))
	jump(bpf.JumpBitsSet, msgFastOpen, "fastopen", "out")
	label("flags2")
	ld(lo(2))
	jump(bpf.JumpBitsSet, msgFastOpen, "fastopen", "out")

	label("socket")
	hiZero(0)
	ld(lo(0))
	jump(bpf.JumpEqual, afInet, "type", "")
	jump(bpf.JumpEqual, afInet6, "type", "deny")
	label("type")
	hiZero(1)
	maskedType()
	jump(bpf.JumpEqual, sockStream, "", "deny")
	hiZero(2)
	ld(lo(2))
	jump(bpf.JumpEqual, 0, "out", "")
	jump(bpf.JumpEqual, ipprotoTCP, "out", "deny")

	label("pair")
	hiZero(0)
	ld(lo(0))
	jump(bpf.JumpEqual, afUnix, "", "deny")
	hiZero(1)
	maskedType()
	jump(bpf.JumpEqual, sockStream, "out", "")
	jump(bpf.JumpEqual, sockSeqpacket, "out", "deny")

	label("fastopen")
	ins(bpf.RetConstant{Val: retErrno | uint32(FastOpenErrno)})
	label("deny")
	ins(bpf.RetConstant{Val: retErrno | uint32(SocketErrno)})
	label("out")
	ld(offNr)
	return assembleGate(g)
}

// assembleGate resolves the gate's labels into forward jump offsets.
func assembleGate(g []gateInsn) ([]bpf.Instruction, error) {
	at := map[string]int{}
	n := 0
	for _, x := range g {
		if x.label != "" {
			at[x.label] = n
			continue
		}
		n++
	}
	var out []bpf.Instruction
	for _, x := range g {
		if x.label != "" {
			continue
		}
		if !x.isCondJ {
			out = append(out, x.in)
			continue
		}
		here := len(out)
		skip := func(l string) (uint8, error) {
			if l == "" {
				return 0, nil
			}
			to, ok := at[l]
			if !ok || to <= here || to-here-1 > 255 {
				return 0, fmt.Errorf("seccomp: socket gate: bad jump to %q", l)
			}
			return uint8(to - here - 1), nil
		}
		jt, err := skip(x.jt)
		if err != nil {
			return nil, err
		}
		jf, err := skip(x.jf)
		if err != nil {
			return nil, err
		}
		out = append(out, bpf.JumpIf{Cond: x.cond, Val: x.val, SkipTrue: jt, SkipFalse: jf})
	}
	return out, nil
}
