package executor_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// socketProbe makes, from inside, one socket of each family and type of
// the table below and, with the ones it got, tries the host's
// witnesses: a TCP connect, a TCP Fast Open send, a UDP datagram, a
// unix stream connect and unix datagrams (from a unix socket and from a
// socket pair) to the host's paths. It prints "R" and {case: "OK" or the
// errno's name}. Then it listens on a TCP socket it did not bind and
// prints "L PORT" (or "L -"), waits for a line on stdin (the host's
// connect attempt is over) and prints "A" and what a connection it
// accepted carried (or "A -"). The verdicts are the host's: what its
// witnesses got.
const socketProbe = `import errno, json, socket, sys
tcp, fastopen, udp, ustream, udgram, nonce = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6].encode()
res = {}
def name(e):
    return errno.errorcode.get(e, str(e))
def attempt(key, f):
    try:
        f()
        res[key] = "OK"
    except OSError as e:
        res[key] = name(e.errno)
def make(key, family, type, proto=0):
    try:
        s = socket.socket(family, type, proto)
        res[key] = "OK"
        return s
    except OSError as e:
        res[key] = name(e.errno)
def pair(key, type):
    try:
        a, b = socket.socketpair(socket.AF_UNIX, type)
        res[key] = "OK"
        return a, b
    except OSError as e:
        res[key] = name(e.errno)
        return None, None
# Each family and type, made only.
for key, f, t, p in [("tcp6", 10, 1, 0), ("tcp IPPROTO_TCP", 2, 1, 6), ("tcp nonblock cloexec", 2, 1 | 0o4000 | 0o2000000, 0),
        ("udp6", 10, 2, 0), ("raw icmp", 2, 3, 1), ("ping", 2, 2, 1), ("sctp", 2, 1, 132), ("mptcp", 2, 1, 262),
        ("unix seqpacket", 1, 5, 0), ("netlink route", 16, 3, 0), ("netlink netfilter", 16, 3, 12), ("packet", 17, 3, 0),
        ("vsock", 40, 1, 0), ("alg", 38, 5, 0), ("tipc", 30, 4, 0)]:
    s = make(key, f, t, p)
    if s:
        s.close()
# And tried on the host's witnesses.
s = make("tcp", 2, 1)
if s:
    s.settimeout(10)
    attempt("connect tcp", lambda: s.connect(("127.0.0.1", tcp)))
s = make("tcp for fast open", 2, 1)
if s:
    s.settimeout(10)
    attempt("fast open", lambda: s.sendto(b"fast open " + nonce, socket.MSG_FASTOPEN, ("127.0.0.1", fastopen)))
s = make("udp", 2, 2)
if s:
    attempt("send udp", lambda: s.sendto(b"udp " + nonce, ("127.0.0.1", udp)))
s = make("unix stream", 1, 1)
if s:
    attempt("connect unix stream", lambda: s.connect(ustream))
s = make("unix dgram", 1, 2)
if s:
    attempt("send unix dgram", lambda: s.sendto(b"unix dgram " + nonce, udgram))
a, b = pair("pair stream", socket.SOCK_STREAM)
if a:
    attempt("pair stream carries", lambda: (a.sendall(b"x"), b.recv(1) == b"x" or 1 / 0))
    attempt("pair stream connect", lambda: a.connect(ustream))
a, b = pair("pair seqpacket", socket.SOCK_SEQPACKET)
a, b = pair("pair dgram", socket.SOCK_DGRAM)
if a:
    attempt("send pair dgram", lambda: a.sendto(b"pair dgram " + nonce, udgram))
print("R", json.dumps(res), flush=True)
s = socket.socket()
port = "-"
try:
    s.listen(1)
    port = str(s.getsockname()[1])
except OSError as e:
    port = "- " + name(e.errno)
print("L", port, flush=True)
sys.stdin.readline()
got = "-"
if not port.startswith("-"):
    s.setblocking(False)
    try:
        c, _ = s.accept()
        c.settimeout(10)
        got = c.recv(64).decode()
    except OSError:
        pass
print("A", got, flush=True)
`

// socketWitnesses are the host's listeners a probe's sockets try.
type socketWitnesses struct {
	tcp, fastOpen  net.Listener
	udp            net.PacketConn
	ustream        net.Listener
	udgram         *net.UnixConn
	ustreamPath    string
	udgramPath     string
	listen         string   // the probe's listener's port, or "-" and the errno
	listenReached  bool     // the host connected to the probe's listener, and the probe read the nonce
	probe          obs      // the probe's answers
	tcpGot, foGot  bool     // a connection waits at the TCP witnesses
	ustreamGot     bool     // ... at the unix stream one
	udpGot, udgGot []string // the datagrams the UDP and unix datagram witnesses got
}

type obs map[string]string

// newWitnesses starts the host's listeners on loopback and, for the unix
// ones, in a directory under /tmp that every uid may enter, each socket
// mode 0777: only the sandbox stands between the probe and them.
func newWitnesses(t *testing.T) *socketWitnesses {
	t.Helper()
	w := &socketWitnesses{}
	var err error
	listen := func(network, addr string) net.Listener {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	w.tcp, w.fastOpen = listen("tcp", "127.0.0.1:0"), listen("tcp", "127.0.0.1:0")
	if w.udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.udp.Close() })
	dir := openDir(t, "/tmp")
	w.ustreamPath, w.udgramPath = filepath.Join(dir, "stream"), filepath.Join(dir, "dgram")
	w.ustream = listen("unix", w.ustreamPath)
	if w.udgram, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: w.udgramPath, Net: "unixgram"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.udgram.Close() })
	for _, p := range []string{w.ustreamPath, w.udgramPath} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// datagrams are what c holds: the probe's sends returned before its run
// ended, so they wait there already (the deadline only ends the reading).
func datagrams(c net.PacketConn) []string {
	var got []string
	buf := make([]byte, 256)
	for {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return got
		}
		got = append(got, string(buf[:n]))
	}
}

// probeSockets runs socketProbe under p, plays the host's part of its
// listen test, and reads the witnesses.
func probeSockets(t *testing.T, ex *executor.Executor, py string, p policy.Policy) *socketWitnesses {
	t.Helper()
	w := newWitnesses(t)
	nonce := fmt.Sprintf("n%d", time.Now().UnixNano())
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	lines := make(chan []string, 1)
	go func() {
		var out []string
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			line := sc.Text()
			out = append(out, line)
			if port, ok := strings.CutPrefix(line, "L "); ok {
				// The host's side: connect to the probe's listener, if it
				// has one, and send the nonce; then tell the probe.
				if !strings.HasPrefix(port, "-") {
					if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second); err == nil {
						c.Write([]byte(nonce))
						defer c.Close()
					}
				}
				stdinW.Write([]byte("done\n"))
				stdinW.Close()
			}
		}
		io.Copy(io.Discard, stdoutR)
		lines <- out
	}()
	args := []string{py, "-c", socketProbe, tcpPort(w.tcp), tcpPort(w.fastOpen), fmt.Sprint(w.udp.LocalAddr().(*net.UDPAddr).Port), w.ustreamPath, w.udgramPath, nonce}
	res, err := ex.Execute(t.Context(), executor.Request{Args: args, Policy: p, Stdin: stdinR, Stdout: stdoutW})
	stdoutW.Close()
	stdinW.Close()
	out := <-lines
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inside:\n%s\n%s", strings.Join(out, "\n"), res.Stderr)
	if res.Status != "ok" {
		t.Fatalf("status %s: %s", res.Status, res.Stderr)
	}
	for _, l := range out {
		switch {
		case strings.HasPrefix(l, "R "):
			if err := json.Unmarshal([]byte(l[2:]), &w.probe); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(l, "L "):
			w.listen = l[2:]
		case strings.HasPrefix(l, "A "):
			w.listenReached = l == "A "+nonce
		}
	}
	if w.probe == nil {
		t.Fatal("the probe reported nothing")
	}
	w.tcpGot, w.foGot, w.ustreamGot = queued(t, w.tcp), queued(t, w.fastOpen), queued(t, w.ustream)
	w.udpGot, w.udgGot = datagrams(w.udp), datagrams(w.udgram)
	return w
}

func tcpPort(ln net.Listener) string { return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port) }

// The socket table, judged from the host, root and rootless: the process
// backend off the host's network (net "", none) makes only TCP sockets
// (socket() is EACCES for every other family and type: UDP, raw, ping,
// SCTP, MPTCP, unix of every type, netlink, packet, vsock, alg, tipc)
// and unix stream and seqpacket pairs (a datagram pair is EACCES), so
// its UDP, unix stream and unix datagram witnesses get nothing; Landlock
// denies its TCP connect (EACCES); it cannot listen (EACCES: listen's own
// bind would serve the host's network) nor send with Fast Open
// (EOPNOTSUPP: that connect is not Landlock's to see), so neither the
// host's connect nor the Fast Open witness gets through. With net host
// the process backend reaches every witness (the positive control), and
// the jail's sockets are the default profile's whatever its network:
// its own namespace keeps them from the host (but with net host its TCP
// and UDP), and no host path of a unix witness is inside.
func TestSocketTable(t *testing.T) {
	py := testutil.RequireBinary(t, "python3")
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	requireLandlock(t, ex, policy.LandlockNet)
	made := []string{"tcp6", "tcp IPPROTO_TCP", "tcp nonblock cloexec", "udp6", "raw icmp", "ping", "sctp", "mptcp", "unix seqpacket",
		"netlink route", "netlink netfilter", "packet", "vsock", "alg", "tipc", "tcp", "tcp for fast open", "udp", "unix stream", "unix dgram",
		"pair stream", "pair seqpacket", "pair dgram"}
	tcpOnly := []string{"tcp6", "tcp IPPROTO_TCP", "tcp nonblock cloexec", "tcp", "tcp for fast open", "pair stream", "pair seqpacket"}
	for _, backend := range []string{"process", "namespaces"} {
		for _, n := range []policy.Net{"", policy.NetNone, policy.NetHost} {
			t.Run(fmt.Sprintf("%s/net %q", backend, n), func(t *testing.T) {
				if backend == "namespaces" {
					testutil.RequireUserNS(t)
				}
				p := policy.Policy{Backend: backend, Net: n}
				w := probeSockets(t, ex, py, p)
				gated := backend == "process" && n != policy.NetHost
				host := n == policy.NetHost
				expect := func(key string, want ...string) {
					t.Helper()
					if !slices.Contains(want, w.probe[key]) {
						t.Errorf("%s: %q, want %q", key, w.probe[key], want)
					}
				}
				if gated {
					for _, key := range made {
						if slices.Contains(tcpOnly, key) {
							expect(key, "OK")
						} else {
							expect(key, "EACCES")
						}
					}
					expect("connect tcp", "EACCES")
					expect("fast open", "EOPNOTSUPP", "ENOTSUP") // one errno, two names
					expect("pair stream carries", "OK")
					expect("pair stream connect", "EISCONN")
				} else {
					// The default profile's sockets (unix, inet, inet6,
					// netlink route), unchanged by the gate.
					for _, key := range []string{"tcp", "tcp6", "udp", "udp6", "unix stream", "unix dgram", "unix seqpacket", "netlink route", "pair stream", "pair seqpacket", "pair dgram"} {
						expect(key, "OK")
					}
					for _, key := range []string{"netlink netfilter", "packet", "vsock", "alg", "tipc"} {
						expect(key, "EPERM")
					}
				}
				if listened := !strings.HasPrefix(w.listen, "-"); listened == gated || gated && w.listen != "- EACCES" {
					t.Errorf("listen: %q (gated %v)", w.listen, gated)
				}
				// The verdicts, from the host's side.
				wantUnix := backend == "process" && host
				for _, c := range []struct {
					what      string
					got, want bool
				}{
					{"the TCP witness got a connection", w.tcpGot, host},
					{"the UDP witness got a datagram", len(w.udpGot) > 0, host},
					{"the unix stream witness got a connection", w.ustreamGot, wantUnix},
					{"the unix datagram witness got the unix socket's datagram", slices.ContainsFunc(w.udgGot, func(s string) bool { return strings.HasPrefix(s, "unix dgram") }), wantUnix},
					{"the unix datagram witness got the pair's datagram", slices.ContainsFunc(w.udgGot, func(s string) bool { return strings.HasPrefix(s, "pair dgram") }), wantUnix},
					{"the host connected to the program's listener", w.listenReached, host},
				} {
					if c.got != c.want {
						t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
					}
				}
				// Fast Open needs the host's client bit (net.ipv4.tcp_fastopen
				// & 1, the default): where it is off the send fails anyway.
				if b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_fastopen"); len(b) > 0 && (b[0]-'0')&1 == 1 && w.foGot != host {
					t.Errorf("the Fast Open witness got a connection: %v, want %v", w.foGot, host)
				}
			})
		}
	}
}

// lookupProbe is what glibc's lookups do where netlink and unix sockets
// are refused: getaddrinfo's AI_ADDRCONFIG asks the kernel over netlink
// which address families have addresses, and the passwd and group
// lookups try nscd's and systemd's unix sockets before the files.
const lookupProbe = `import json, socket, pwd, grp
out = {}
def attempt(key, f):
    try:
        out[key] = f()
    except KeyError:
        out[key] = "KeyError"
    except OSError as e:
        out[key] = "OSError %d" % e.errno
attempt("getaddrinfo", lambda: sorted(set(a[4][0] for a in socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM))))
attempt("getaddrinfo addrconfig", lambda: sorted(set(a[4][0] for a in socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG))))
attempt("getpwnam root", lambda: pwd.getpwnam("root").pw_uid)
attempt("getpwnam unknown", lambda: pwd.getpwnam("airlock-no-such-user"))
attempt("getgrgid 0", lambda: grp.getgrgid(0).gr_name)
attempt("if_nameindex", lambda: len(socket.if_nameindex()) > 0)
print(json.dumps(out, sort_keys=True))
`

// glibc's own lookups still work where the process backend refuses
// netlink and unix sockets: getaddrinfo("localhost"), with AI_ADDRCONFIG
// too, getpwnam (of a known and of an unknown user) and getgrgid give
// what they give with every socket allowed (the same backend and
// Landlock rules on net host, the reference: bare, the host's own
// /etc/passwd is readable, which Landlock denies here), from Python and
// from glibc's getent (a C program). Only the interface list, which
// glibc reads over netlink alone, is refused (EACCES): under the jail it
// would list the jail's lo only, here it would list the host's.
func TestSocketGateLookups(t *testing.T) {
	py := testutil.RequireBinary(t, "python3")
	getent := testutil.RequireBinary(t, "getent")
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	requireLandlock(t, ex, policy.LandlockNet)
	run := func(net policy.Net, args ...string) string {
		t.Helper()
		res, err := ex.Execute(t.Context(), executor.Request{Args: args, Policy: policy.Policy{Backend: "process", Net: net}})
		if err != nil || res.Status != "ok" {
			t.Fatalf("net %q: %v %+v", net, err, res)
		}
		return res.Stdout
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(run(policy.NetNone, py, "-c", lookupProbe)), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(run(policy.NetHost, py, "-c", lookupProbe)), &want); err != nil {
		t.Fatal(err)
	}
	if want["if_nameindex"] != true || want["getpwnam root"] != 0.0 || want["getpwnam unknown"] != "KeyError" {
		t.Fatalf("the reference run: %v", want)
	}
	want["if_nameindex"] = "OSError 13"
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("net none %v\nnet host %v", got, want)
	}
	sh := fmt.Sprintf(`%[1]s ahosts localhost | sort -u; %[1]s passwd root; %[1]s group 0; %[1]s passwd airlock-no-such-user; echo "unknown: $?"`, getent)
	gotSh, wantSh := run(policy.NetNone, "sh", "-c", sh), run(policy.NetHost, "sh", "-c", sh)
	if gotSh != wantSh || !strings.Contains(gotSh, "STREAM localhost") || !strings.Contains(gotSh, "root:x:0:") || !strings.Contains(gotSh, "unknown: 2") {
		t.Errorf("getent, net none: %q\nnet host: %q", gotSh, wantSh)
	}
}
