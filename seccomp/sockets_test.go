//go:build linux

package seccomp

import (
	"runtime"
	"slices"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// The socket gate (TCPOnly) over the default profile, an allow-all
// profile and a profile whose rules allow every socket: socket() is left
// to the profile only for TCP over IPv4 and IPv6 (flags masked off,
// protocol 0 or IPPROTO_TCP), socketpair() only for unix stream and
// seqpacket pairs; everything else is EACCES, whatever the profile
// allows; other syscalls are decided as without the gate.
func TestSocketGate(t *testing.T) {
	native := arches[runtime.GOARCH].audit
	socket, pair := sysnums[runtime.GOARCH]["socket"], sysnums[runtime.GOARCH]["socketpair"]
	eacces := uint32(retErrno | unix.EACCES)
	const hiBit = 1 << 32
	flags := uint64(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)
	type call struct {
		name string
		nr   uint32
		args []uint64
		pass bool // the gate lets it through to the profile
	}
	calls := []call{
		{"tcp", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, 0}, true},
		{"tcp, IPPROTO_TCP", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP}, true},
		{"tcp6, flags", socket, []uint64{unix.AF_INET6, unix.SOCK_STREAM | flags, 0}, true},
		{"tcp, nonblock", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, 0}, true},
		{"udp", socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, false},
		{"udp, IPPROTO_UDP", socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP}, false},
		{"udp6, cloexec", socket, []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, 0}, false},
		{"icmp ping", socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, false},
		{"raw", socket, []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW}, false},
		{"raw6", socket, []uint64{unix.AF_INET6, unix.SOCK_RAW, 0}, false},
		{"sctp stream", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, false},
		{"sctp seqpacket", socket, []uint64{unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP}, false},
		{"mptcp", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, 262}, false},
		{"tcp, another flag", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM | 0x100, 0}, false},
		{"tcp, high family bit", socket, []uint64{hiBit | unix.AF_INET, unix.SOCK_STREAM, 0}, false},
		{"tcp, high type bit", socket, []uint64{unix.AF_INET, hiBit | unix.SOCK_STREAM, 0}, false},
		{"tcp, high protocol bit", socket, []uint64{unix.AF_INET, unix.SOCK_STREAM, hiBit}, false},
		{"unix stream", socket, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, false},
		{"unix dgram", socket, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, false},
		{"unix seqpacket", socket, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | flags, 0}, false},
		{"netlink route", socket, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, false},
		{"netlink dgram", socket, []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, 0}, false},
		{"packet", socket, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, false},
		{"vsock", socket, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, false},
		{"alg", socket, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, false},
		{"tipc", socket, []uint64{unix.AF_TIPC, unix.SOCK_RDM, 0}, false},
		{"bluetooth", socket, []uint64{unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0}, false},
		{"family 0", socket, []uint64{0, unix.SOCK_STREAM, 0}, false},
		{"pair unix stream", pair, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0, 0}, true},
		{"pair unix stream, flags", pair, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | flags, 0, 0}, true},
		{"pair unix seqpacket", pair, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0, 0}, true},
		{"pair unix dgram", pair, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0, 0}, false},
		{"pair unix, high type bit", pair, []uint64{unix.AF_UNIX, hiBit | unix.SOCK_STREAM, 0, 0}, false},
		{"pair tipc", pair, []uint64{unix.AF_TIPC, unix.SOCK_SEQPACKET, 0, 0}, false},
		{"pair inet", pair, []uint64{unix.AF_INET, unix.SOCK_STREAM, 0, 0}, false},
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
	others := []string{"getpid", "read", "connect", "sendto", "bind", "mount", "clone3"}
	for _, prof := range []*Profile{def, allowAll, opened} {
		for _, notify := range []bool{false, true} {
			bare, err := Compile(prof, Options{Notify: notify})
			if err != nil {
				t.Fatal(err)
			}
			gated, err := Compile(prof, Options{Notify: notify, TCPOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(gated) <= len(bare) {
				t.Fatalf("%s: the gated filter (%d) is no longer than the bare one (%d)", prof.Name, len(gated), len(bare))
			}
			for _, c := range calls {
				want := eval(t, bare, native, c.nr, c.args...)
				if !c.pass {
					want = eacces
				}
				if got := eval(t, gated, native, c.nr, c.args...); got != want {
					t.Errorf("%s, notify %v: %s: %#x, want %#x", prof.Name, notify, c.name, got, want)
				}
			}
			for _, name := range others {
				nr := sysnums[runtime.GOARCH][name]
				for _, args := range [][]uint64{nil, {unix.AF_UNIX, unix.SOCK_DGRAM, 0}} {
					if got, want := eval(t, gated, native, nr, args...), eval(t, bare, native, nr, args...); got != want {
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
	gated, _ := Compile(def, Options{TCPOnly: true})
	if got := eval(t, gated, auditI386, socket, unix.AF_INET, unix.SOCK_STREAM, 0); got != retKillProcess {
		t.Errorf("i386 socket: %#x, want KILL_PROCESS", got)
	}
	if slices.Equal(gated, bare) {
		t.Error("TCPOnly compiled the same program")
	}
}
