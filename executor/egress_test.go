package executor_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// egressServers are the host's loopback test servers: plain HTTP, TLS,
// and one no rule names (which must never be reached).
type egressServers struct {
	plain, secure, other *httptest.Server
	pport, sport, oport  int
	caPEM                []byte
	otherHits            atomic.Int32
}

func newEgressServers(t *testing.T, plain http.Handler) *egressServers {
	t.Helper()
	s := &egressServers{}
	if plain == nil {
		plain = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain "+r.URL.Path) })
	}
	s.plain = httptest.NewServer(plain)
	s.secure = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure "+r.URL.Path) }))
	s.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.otherHits.Add(1) }))
	t.Cleanup(func() { s.plain.Close(); s.secure.Close(); s.other.Close() })
	s.pport, s.sport, s.oport = port(t, s.plain.URL), port(t, s.secure.URL), port(t, s.other.URL)
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.secure.Certificate().Raw})
	return s
}

func port(t *testing.T, raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(u.Host)
	n := 0
	fmt.Sscan(p, &n)
	return n
}

func egressPolicy(allow ...string) policy.Policy {
	p := policy.Default()
	p.Timeout = policy.Duration(60 * time.Second)
	p.Net, p.Egress.Allow = policy.NetAllow, allow
	return p
}

func newEgressExecutor(t *testing.T, cfg executor.Config) *executor.Executor {
	t.Helper()
	testutil.RequireUserNS(t)
	cfg.WorkDir = testutil.WorldReadableDir(t)
	ex, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex
}

// TestEgressNetworkLog: curl inside reaches the host's loopback HTTP and
// TLS servers through the proxy (HTTP proxy and SOCKS5) where a rule
// names 127.0.0.1:PORT, and is refused where none does and where only
// "localhost" (which resolves to 127.0.0.1) is allowed: exactly 3
// allowed and 2 denied entries in the result's network list.
func TestEgressNetworkLog(t *testing.T) {
	testutil.RequireBinary(t, "curl")
	s := newEgressServers(t, nil)
	ex := newEgressExecutor(t, executor.Config{})
	// --noproxy '': the host's 127.0.0.1 is reached through the proxy
	// (NO_PROXY names the sandbox's own loopback).
	script := fmt.Sprintf(`set -u
c="curl -sS --noproxy '' --max-time 20"
$c http://127.0.0.1:%[1]d/a; echo
$c --cacert /workspace/ca.pem https://127.0.0.1:%[2]d/b; echo
$c -x "$ALL_PROXY" http://127.0.0.1:%[1]d/c; echo
$c -o /dev/null -w '%%{http_code}\n' http://127.0.0.1:%[3]d/d
$c -x "$ALL_PROXY" http://localhost:%[3]d/e 2>/dev/null; echo "socks localhost: $?"
`, s.pport, s.sport, s.oport)
	req := executor.Request{Args: []string{"/bin/sh", "-c", script}, Files: map[string][]byte{"ca.pem": s.caPEM},
		Policy: egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport), fmt.Sprintf("127.0.0.1:%d", s.sport), fmt.Sprintf("localhost:%d", s.oport))}
	res, err := ex.Execute(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := "plain /a\nsecure /b\nplain /c\n403\nsocks localhost: 97\n"
	if res.Stdout != want || res.Status != nsjail.StatusOK {
		t.Fatalf("status %s, stdout %q, want %q; stderr %s", res.Status, res.Stdout, want, res.Stderr)
	}
	if s.otherHits.Load() != 0 {
		t.Error("the server no rule names was reached")
	}
	if res.Enforced.Network != "allow" {
		t.Errorf("enforced.network %q", res.Enforced.Network)
	}
	loopback := "denied: 127.0.0.1 is loopback (127.0.0.0/8) and no rule names it"
	wantLog := []egress.Conn{
		{Host: "127.0.0.1", Port: s.pport, Address: "127.0.0.1", Protocol: "http", Verdict: "allowed"},
		{Host: "127.0.0.1", Port: s.sport, Address: "127.0.0.1", Protocol: "connect", Verdict: "allowed"},
		{Host: "127.0.0.1", Port: s.pport, Address: "127.0.0.1", Protocol: "socks5", Verdict: "allowed"},
		{Host: "127.0.0.1", Port: s.oport, Protocol: "http", Verdict: loopback},
		{Host: "localhost", Port: s.oport, Protocol: "socks5", Verdict: loopback},
	}
	if len(res.Network) != len(wantLog) || res.NetworkDropped != 0 {
		t.Fatalf("network %+v, want %d entries", res.Network, len(wantLog))
	}
	for i, w := range wantLog {
		g := res.Network[i]
		if g.Host != w.Host || g.Port != w.Port || g.Address != w.Address || g.Protocol != w.Protocol || g.Verdict != w.Verdict || g.Error != "" {
			t.Errorf("network[%d] = %+v, want %+v", i, g, w)
		}
		if allowed := w.Verdict == "allowed"; allowed != (g.BytesUp > 0 && g.BytesDown > 0) {
			t.Errorf("network[%d] = %+v: bytes up and down must be counted for allowed entries only", i, g)
		}
	}
}

// TestEgressUnnamedTLS: a TLS server on the host's loopback that no rule
// names is refused at the CONNECT (curl exits 56 on the proxy's 403), the
// server never sees a connection, and the log says why.
func TestEgressUnnamedTLS(t *testing.T) {
	testutil.RequireBinary(t, "curl")
	s := newEgressServers(t, nil)
	var hits atomic.Int32
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "unnamed") }))
	tlsSrv.Config.ConnState = func(net.Conn, http.ConnState) { hits.Add(1) }
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	ex := newEgressExecutor(t, executor.Config{})
	script := fmt.Sprintf(`curl -sS --noproxy '' --max-time 20 -k https://127.0.0.1:%d/x 2>/dev/null; echo "curl: $?"`, port(t, tlsSrv.URL))
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", script},
		Policy: egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "curl: 56\n" || res.Status != nsjail.StatusOK {
		t.Fatalf("status %s, stdout %q, want curl's exit 56 (CONNECT refused); stderr %s", res.Status, res.Stdout, res.Stderr)
	}
	if hits.Load() != 0 {
		t.Error("the TLS server no rule names saw a connection")
	}
	want := "denied: 127.0.0.1 is loopback (127.0.0.0/8) and no rule names it"
	if len(res.Network) != 1 || res.Network[0].Protocol != "connect" || res.Network[0].Verdict != want || res.Network[0].BytesUp != 0 {
		t.Errorf("network %+v, want one denied CONNECT: %s", res.Network, want)
	}
}

// TestEgressBypass: a program that ignores the proxy has no network: a
// raw connect to the host server's address fails with a network error,
// and the host's abstract unix sockets are out of reach (the sandbox has
// a network namespace of its own).
func TestEgressBypass(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	s := newEgressServers(t, nil)
	abstract := fmt.Sprintf("@airlock-egress-test-%d", os.Getpid())
	ul, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	var unixHits atomic.Int32
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			unixHits.Add(1)
			c.Close()
		}
	}()
	ex := newEgressExecutor(t, executor.Config{})
	code := fmt.Sprintf(`import socket
for addr in [("127.0.0.1", %d), ("127.0.0.1", %d)]:
    try:
        socket.create_connection(addr, timeout=5); print("connected", addr)
    except OSError as e:
        print("refused", e.errno)
u = socket.socket(socket.AF_UNIX)
try:
    u.connect("\0%s"); print("unix connected")
except OSError as e:
    print("unix refused", e.errno)
`, s.pport, s.sport, strings.TrimPrefix(abstract, "@"))
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"python3", "-c", code},
		Policy: egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport), fmt.Sprintf("127.0.0.1:%d", s.sport))})
	if err != nil {
		t.Fatal(err)
	}
	if want := "refused 111\nrefused 111\nunix refused 111\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %s)", res.Stdout, want, res.Stderr)
	}
	if unixHits.Load() != 0 {
		t.Error("the host's abstract unix socket was reached from inside")
	}
	if len(res.Network) != 0 {
		t.Errorf("network %+v: nothing went through the proxy", res.Network)
	}
}

// TestEgressPip: pip inside installs a package, a wheel this test makes,
// from a package index the test serves on the host's loopback, through
// the proxy.
func TestEgressPip(t *testing.T) {
	py := testutil.RequireBinary(t, "python3")
	testutil.RequireFeature(t, "pip for "+py+" (python3-pip)", testutil.Exists("/usr/lib/python3/dist-packages/pip"))
	wheel, name := makeWheel(t)
	sum := sha256.Sum256(wheel)
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/airlock-egress-probe/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, name, hex.EncodeToString(sum[:]), name)
	})
	mux.HandleFunc("/files/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
	s := newEgressServers(t, mux)
	ex := newEgressExecutor(t, executor.Config{})
	p := egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport))
	p.Setenv = map[string]string{"NO_PROXY": "", "no_proxy": ""} // the index is on the host's 127.0.0.1
	// 300 s, not egressPolicy's 60: pip takes 0.9 s here, but over 60 s
	// in the emulated cgroup v2 guest while the host's race phase shares
	// its two CPUs (a clean-clone CI run timed out so, with no output).
	p.Timeout = policy.Duration(300 * time.Second)
	script := fmt.Sprintf(`python3 -m pip install -q --disable-pip-version-check --no-cache-dir --index-url http://127.0.0.1:%d/simple --target /workspace/lib airlock-egress-probe &&
PYTHONPATH=/workspace/lib python3 -c 'import airlock_egress_probe; print(airlock_egress_probe.VALUE)'`, s.pport)
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", script}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != nsjail.StatusOK || res.Stdout != "42\n" {
		t.Fatalf("status %s stdout %q stderr %s", res.Status, res.Stdout, res.Stderr)
	}
	if len(res.Network) < 2 {
		t.Fatalf("network %+v: want the index page and the wheel", res.Network)
	}
	for _, c := range res.Network {
		if c.Verdict != "allowed" || c.Port != s.pport {
			t.Errorf("network entry %+v", c)
		}
	}
}

// makeWheel builds a pure-Python wheel: the package airlock_egress_probe
// with VALUE = 42.
func makeWheel(t *testing.T) ([]byte, string) {
	t.Helper()
	const dist = "airlock_egress_probe-1.0"
	files := []struct{ name, body string }{
		{"airlock_egress_probe/__init__.py", "VALUE = 42\n"},
		{dist + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: airlock-egress-probe\nVersion: 1.0\n"},
		{dist + ".dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := z.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, f.body)
		h := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(h[:]), len(f.body))
	}
	record.WriteString(dist + ".dist-info/RECORD,,\n")
	w, err := z.Create(dist + ".dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, record.String())
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), dist + "-py3-none-any.whl"
}

// TestEgressNode: node's fetch reaches the host's servers through the
// proxy. Node >= 24 (and 22.21) does so by itself with the
// NODE_USE_ENV_PROXY=1 the sandbox is given; older ones need a global
// dispatcher, here Debian's undici package's ProxyAgent (node-undici),
// which node's own fetch then uses.
func TestEgressNode(t *testing.T) {
	testutil.RequireBinary(t, "node")
	testutil.RequireFeature(t, "node-undici in /usr/share/nodejs", testutil.Exists("/usr/share/nodejs/undici/index.js"))
	s := newEgressServers(t, nil)
	ex := newEgressExecutor(t, executor.Config{})
	p := egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport), fmt.Sprintf("127.0.0.1:%d", s.sport))
	p.Setenv = map[string]string{"NO_PROXY": "", "no_proxy": "", "NODE_PATH": "/usr/share/nodejs", "NODE_EXTRA_CA_CERTS": "/workspace/ca.pem"}
	code := fmt.Sprintf(`const [major, minor] = process.versions.node.split(".").map(Number);
if (!(major >= 24 || (major === 22 && minor >= 21))) {
  const { setGlobalDispatcher, ProxyAgent } = require("undici");
  setGlobalDispatcher(new ProxyAgent(process.env.HTTPS_PROXY));
}
(async () => {
  for (const u of ["http://127.0.0.1:%d/n1", "https://127.0.0.1:%d/n2"]) {
    const r = await fetch(u);
    console.log(r.status, await r.text());
  }
})().catch((e) => { console.log("error", e.cause ? e.cause.message : e.message); process.exit(1); });
`, s.pport, s.sport)
	res, err := ex.Execute(t.Context(), executor.Request{Language: "node", Code: code, Files: map[string][]byte{"ca.pem": s.caPEM}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if want := "200 plain /n1\n200 secure /n2\n"; res.Stdout != want {
		t.Fatalf("stdout %q, want %q; stderr %s", res.Stdout, want, res.Stderr)
	}
	if len(res.Network) != 2 || res.Network[0].Verdict != "allowed" || res.Network[1].Verdict != "allowed" {
		t.Errorf("network %+v", res.Network)
	}
}

// TestEgressMetadataRefused: the metadata address, private addresses
// and a ULA are refused by the real jail's proxy even under a rule that
// covers every address on port 80, and no packet leaves the machine:
// the proxy's dialer fails the test if it is called with anything but a
// loopback address.
func TestEgressMetadataRefused(t *testing.T) {
	testutil.RequireBinary(t, "curl")
	ex := newEgressExecutor(t, executor.Config{})
	p := egressPolicy("0.0.0.0/0:80", "[::/0]:80")
	script := `for u in http://169.254.169.254/latest/meta-data/ http://10.0.0.1/ http://[fd00::1]/ http://100.64.0.1/; do
  curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' "$u"
done`
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", script}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int32
	spec.Egress, err = egress.New(egress.Config{Egress: p.Egress, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.Add(1)
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("the proxy dialled %s", address)
			return nil, fmt.Errorf("test: not dialling %s", address)
		}
		return (&net.Dialer{}).DialContext(ctx, network, address)
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := nsjail.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "403\n403\n403\n403\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q; stderr %s", res.Stdout, want, res.Stderr)
	}
	if dials.Load() != 0 {
		t.Errorf("%d dials", dials.Load())
	}
	for _, c := range res.Network {
		if !c.Denied() {
			t.Errorf("allowed: %+v", c)
		}
	}
	if len(res.Network) != 4 {
		t.Errorf("network %+v, want 4 entries", res.Network)
	}
}

// TestEgressWarmPool: a pool prepared for net allow serves requests
// warm, each under its own rules; a request without net allow runs cold.
func TestEgressWarmPool(t *testing.T) {
	testutil.RequireBinary(t, "curl")
	s := newEgressServers(t, nil)
	ex := newEgressExecutor(t, executor.Config{Pool: executor.PoolConfig{Size: 1, Policy: egressPolicy("pool.invalid")}})
	testutil.WaitFor(30*time.Second, func() bool { return ex.PoolStats().Ready == 1 })
	script := fmt.Sprintf(`curl -sS --noproxy '' --max-time 20 http://127.0.0.1:%d/w`, s.pport)
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/bin/sh", "-c", script}, Policy: egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "plain /w" || len(res.Network) != 1 || res.Network[0].Verdict != "allowed" {
		t.Errorf("stdout %q network %+v stderr %s", res.Stdout, res.Network, res.Stderr)
	}
	if st := ex.PoolStats(); st.Warm != 1 {
		t.Errorf("pool stats %+v: the request did not run warm", st)
	}
}

// TestEgressNothingLeft: the listener never reaches the program (its
// fds are 0-2; it cannot bind the proxy's port, which the listener
// holds), and no run leaves an fd, a process, a cgroup or a workspace
// behind: an ordinary run, a run whose exec fails after the proxy
// started, a run cancelled mid-connection, and a pool's prepared
// sandboxes closed unused.
func TestEgressNothingLeft(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	s := newEgressServers(t, nil)
	work := testutil.WorldReadableDir(t)
	fds := testutil.CountFDs(t)
	ex, err := executor.New(executor.Config{WorkDir: work, Pool: executor.PoolConfig{Size: 2, Policy: egressPolicy("pool.invalid")}})
	if err != nil {
		t.Fatal(err)
	}
	p := egressPolicy(fmt.Sprintf("127.0.0.1:%d", s.pport))
	code := `import os, socket
print(sorted(int(f) for f in os.listdir("/proc/self/fd"))[:3])
s = socket.socket()
try:
    s.bind(("127.0.0.1", 3128)); print("bound")
except OSError as e:
    print("bind", e.errno)
`
	res, err := ex.Execute(t.Context(), executor.Request{Args: []string{"python3", "-c", code}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[0, 1, 2]\nbind 98\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q; stderr %s", res.Stdout, want, res.Stderr)
	}
	if _, err := ex.Execute(t.Context(), executor.Request{Args: []string{"/no/such/program"}, Policy: p}); err == nil {
		t.Error("a missing program ran")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	hang := fmt.Sprintf(`import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n")
print(s.recv(100), flush=True)
s.recv(100)`, s.pport)
	if _, err := ex.Execute(ctx, executor.Request{Args: []string{"python3", "-c", hang}, Policy: p}); err == nil {
		t.Error("the cancelled run has a result")
	}
	ex.Close()
	testutil.CheckNothingLeft(t, testutil.Left{Work: work, FDs: fds})
}

// A live sandbox with an allow-list: its proxy serves every process for
// the sandbox's life, a named host is reached from one call and the
// next, another is refused, and the sandbox's log has both.
func TestEgressLiveSandbox(t *testing.T) {
	testutil.RequireBinary(t, "curl")
	srv := newEgressServers(t, nil)
	ex := newEgressExecutor(t, executor.Config{SpawnPath: testutil.RequireReaper(t)})
	p := egressPolicy(fmt.Sprintf("127.0.0.1:%d", srv.pport))
	if !ex.Host().Has(policy.CheckCgroup) && !testutil.ExpectCgroups() {
		p.BestEffort = policy.DegradeLimits // rootless on cgroup v1 only
	}
	s, err := ex.NewSandbox(t.Context(), executor.SandboxConfig{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, path := range []string{"/one", "/two"} {
		res, err := s.Run(t.Context(), executor.ProcessRequest{Command: fmt.Sprintf("curl -sS --noproxy '' --max-time 20 http://127.0.0.1:%d%s", srv.pport, path)}, nil)
		if err != nil || res.Stdout != "plain "+path {
			t.Fatalf("%s: %+v %v", path, res, err)
		}
	}
	res, err := s.Run(t.Context(), executor.ProcessRequest{Command: fmt.Sprintf("curl -s --noproxy '' -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/x", srv.oport)}, nil)
	if err != nil || res.Stdout != "403" || srv.otherHits.Load() != 0 {
		t.Fatalf("unnamed host: %+v %v (hits %d)", res, err, srv.otherHits.Load())
	}
	info := s.Info()
	if len(info.Network) != 3 || info.Network[0].Verdict != "allowed" || info.Network[2].Verdict == "allowed" || res.Enforced.Network != "allow" {
		t.Fatalf("log %+v, enforced %q", info.Network, res.Enforced.Network)
	}
}
