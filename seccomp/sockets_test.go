//go:build linux

package seccomp

import (
	"runtime"
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// The socket gate (SocketGate) over the default profile, an allow-all
// profile and a profile whose rules allow every socket: socket() is left
// to the profile only for TCP over IPv4 and IPv6 (flags masked off,
// protocol 0 or IPPROTO_TCP), socketpair() only for unix stream and
// seqpacket pairs, sends only without MSG_FASTOPEN (EOPNOTSUPP);
// every other socket, and listen, is EACCES, whatever the profile
// allows; other syscalls are decided as without the gate.
func TestSocketGate(t *testing.T) {
	native := arches[runtime.GOARCH].audit
	nr := sysnums[runtime.GOARCH]
	socket, pair := nr["socket"], nr["socketpair"]
	eacces, eopnotsupp := uint32(retErrno|unix.EACCES), uint32(retErrno|unix.EOPNOTSUPP)
	const hiBit = 1 << 32
	flags := uint64(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)
	type call struct {
		name string
		nr   uint32
		args []uint64
		deny uint32 // the gate's answer; 0: it lets it through to the profile
	}
	calls := []call{
		{"tcp", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, 0}, 0},
		{"tcp, IPPROTO_TCP", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP}, 0},
		{"tcp6, flags", socket, []uint64{unix.AF_INET6, unix.SOCK_STREAM | flags, 0}, 0},
		{"tcp, nonblock", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, 0}, 0},
		{"udp", socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, eacces},
		{"udp, IPPROTO_UDP", socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP}, eacces},
		{"udp6, cloexec", socket, []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, 0}, eacces},
		{"icmp ping", socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, eacces},
		{"raw", socket, []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW}, eacces},
		{"raw6", socket, []uint64{unix.AF_INET6, unix.SOCK_RAW, 0}, eacces},
		{"sctp stream", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, eacces},
		{"sctp seqpacket", socket, []uint64{unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP}, eacces},
		{"mptcp", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, 262}, eacces},
		{"tcp, another flag", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM | 0x100, 0}, eacces},
		{"tcp, high family bit", socket, []uint64{hiBit | unix.AF_INET, unix.SOCK_STREAM, 0}, eacces},
		{"tcp, high type bit", socket, []uint64{unix.AF_INET, hiBit | unix.SOCK_STREAM, 0}, eacces},
		{"tcp, high protocol bit", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, hiBit}, eacces},
		{"unix stream", socket, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, eacces},
		{"unix dgram", socket, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, eacces},
		{"unix seqpacket", socket, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | flags, 0}, eacces},
		{"netlink route", socket, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, eacces},
		{"netlink dgram", socket, []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, 0}, eacces},
		{"packet", socket, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eacces},
		{"vsock", socket, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, eacces},
		{"alg", socket, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, eacces},
		{"tipc", socket, []uint64{unix.AF_TIPC, unix.SOCK_RDM, 0}, eacces},
		{"bluetooth", socket, []uint64{unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0}, eacces},
		{"family 0", socket, []uint64{0, unix.SOCK_STREAM, 0}, eacces},
		{"pair unix stream", pair, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0, 0}, 0},
		{"pair unix stream, flags", pair, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | flags, 0, 0}, 0},
		{"pair unix seqpacket", pair, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0, 0}, 0},
		{"pair unix dgram", pair, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0, 0}, eacces},
		{"pair unix, high type bit", pair, []uint64{unix.AF_UNIX, hiBit | unix.SOCK_STREAM, 0, 0}, eacces},
		{"pair tipc", pair, []uint64{unix.AF_TIPC, unix.SOCK_SEQPACKET, 0, 0}, eacces},
		{"pair inet", pair, []uint64{unix.AF_INET, unix.SOCK_STREAM, 0, 0}, eacces},
		// listen binds an unbound TCP socket itself, unchecked by Landlock.
		{"listen", nr["listen"], []uint64{3, 1}, eacces},
		// Fast Open connects inside the send, unchecked by Landlock.
		{"sendto fastopen", nr["sendto"], []uint64{3, 0, 2, unix.MSG_FASTOPEN, 0, 16}, eopnotsupp},
		{"sendto fastopen|nosignal", nr["sendto"], []uint64{3, 0, 2, unix.MSG_FASTOPEN | unix.MSG_NOSIGNAL, 0, 16}, eopnotsupp},
		{"sendmsg fastopen", nr["sendmsg"], []uint64{3, 0, unix.MSG_FASTOPEN}, eopnotsupp},
		{"sendmmsg fastopen", nr["sendmmsg"], []uint64{3, 0, 1, unix.MSG_FASTOPEN}, eopnotsupp},
		{"sendto", nr["sendto"], []uint64{3, 0, 2, unix.MSG_NOSIGNAL | unix.MSG_DONTWAIT, 0, 16}, 0},
		{"sendto, fastopen in the high word", nr["sendto"], []uint64{3, 0, 2, unix.MSG_FASTOPEN << 32, 0, 16}, 0},
		{"sendmsg", nr["sendmsg"], []uint64{3, 0, unix.MSG_NOSIGNAL}, 0},
		{"sendmsg, fastopen in arg 3", nr["sendmsg"], []uint64{3, 0, 0, unix.MSG_FASTOPEN}, 0},
		{"sendmmsg", nr["sendmmsg"], []uint64{3, 0, 1, 0}, 0},
	}
	def, err := DefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	allowAll := &Profile{Name: "allow", DefaultAction: policy.ActAllow}
	sockets := []string{"socket", "socketpair"}
	opened := func() *Profile {
		p, _ := DefaultProfile()
		p.Override(policy.SyscallRule{Names: sockets, Action: policy.ActAllow})
		return p
	}()
	others := []string{"getpid", "read", "connect", "bind", "accept4", "recvmsg", "setsockopt", "mount", "clone3"}
	for _, prof := range []*Profile{def, allowAll, opened} {
		for _, notify := range []bool{false, true} {
			bare, err := Compile(prof, Options{Notify: notify})
			if err != nil {
				t.Fatal(err)
			}
			gated, err := Compile(prof, Options{Notify: notify, SocketGate: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(gated) <= len(bare) {
				t.Fatalf("%s: the gated filter (%d) is no longer than the bare one (%d)", prof.Name, len(gated), len(bare))
			}
			for _, c := range calls {
				want := eval(t, bare, native, c.nr, c.args...)
				if c.deny != 0 {
					want = c.deny
				}
				if got := eval(t, gated, native, c.nr, c.args...); got != want {
					t.Errorf("%s, notify %v: %s: %#x, want %#x", prof.Name, notify, c.name, got, want)
				}
			}
			for _, name := range others {
				n := nr[name]
				for _, args := range [][]uint64{nil, {unix.AF_UNIX, unix.SOCK_DGRAM, 0}} {
					if got, want := eval(t, gated, native, n, args...), eval(t, bare, native, n, args...); got != want {
						t.Errorf("%s: %s%v: %#x with the gate, %#x without", prof.Name, name, args, got, want)
					}
				}
			}
		}
	}
	// Without the gate, the default profile's decisions are as before
	// (its own socket rules: unix and netlink route allowed).
	bare, _ := Compile(def, Options{})
	if got := eval(t, bare, native, socket, unix.AF_UNIX, unix.SOCK_DGRAM, 0); got != retAllow {
		t.Errorf("the default profile without the gate: unix dgram %#x, want allowed", got)
	}
	// A foreign arch is still killed first.
	gated, _ := Compile(def, Options{SocketGate: true})
	if got := eval(t, gated, auditI386, socket, unix.AF_INET, unix.SOCK_STREAM, 0); got != retKillProcess {
		t.Errorf("i386 socket: %#x, want KILL_PROCESS", got)
	}
	if slices.Equal(gated, bare) {
		t.Error("SocketGate compiled the same program")
	}
}
