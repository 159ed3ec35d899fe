package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// Port is where the proxy listens on the sandbox's loopback
// (127.0.0.1:Port inside its own network namespace).
const Port = 3128

// Env is the proxy environment of a sandbox with net allow: the
// variables HTTP clients read (upper and lower case), NO_PROXY for the
// sandbox's own loopback, and NODE_USE_ENV_PROXY, with which Node.js
// (>= 22.21 and 24) makes fetch and http honour them.
func Env() map[string]string {
	httpURL := "http://127.0.0.1:" + strconv.Itoa(Port)
	socksURL := "socks5h://127.0.0.1:" + strconv.Itoa(Port)
	env := map[string]string{"NODE_USE_ENV_PROXY": "1"}
	for _, kv := range [][2]string{{"HTTP_PROXY", httpURL}, {"HTTPS_PROXY", httpURL}, {"ALL_PROXY", socksURL}, {"NO_PROXY", "localhost,127.0.0.1"}} {
		env[kv[0]] = kv[1]
		env[toLower(kv[0])] = kv[1]
	}
	return env
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Conn is one connection the sandbox asked the proxy for: an entry of a
// result's network list.
type Conn struct {
	// Host and Port are what the sandbox asked for: a name or an IP.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Address is the address dialled ("" when denied before one was
	// chosen, or when every dial failed).
	Address string `json:"address,omitempty"`
	// Protocol is how it was asked: "connect" (HTTP CONNECT), "http"
	// (an absolute-URI request) or "socks5".
	Protocol string `json:"protocol"`
	// Verdict is "allowed" or "denied: REASON".
	Verdict string `json:"verdict"`
	// BytesUp went from the sandbox to the host, BytesDown back.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// DurationMS is from the request to the end of the connection.
	DurationMS int64 `json:"duration_ms"`
	// Error says how an allowed connection failed or was cut: a dial
	// error, "idle timeout", "byte limit", "run ended".
	Error string `json:"error,omitempty"`
}

// Denied reports whether the connection was refused by the rules or a
// limit.
func (c Conn) Denied() bool { return c.Verdict != "allowed" }

// Config configures a Proxy.
type Config struct {
	// Egress is the policy's allow-list and limits.
	Egress policy.Egress
	// Resolver resolves names. nil = net.DefaultResolver.
	Resolver Resolver
	// Dial dials the checked addresses ("tcp", "IP:PORT"). nil = a
	// net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// OnDeny, if set, is called with each denied connection (the CLI's
	// --verbose line). It must not block.
	OnDeny func(Conn)
}

// maxDials bounds the addresses of one name tried in turn (10 s each at
// most).
const maxDials = 4

// maxLog bounds the connection log; later connections are counted in
// Dropped only.
const maxLog = 4096

// Proxy is one sandbox's egress proxy: HTTP (CONNECT and absolute-URI
// requests) and SOCKS5 (CONNECT) on one listener, told apart by the
// first byte. It admits what its Rules allow, within its limits, and
// logs every connection. Serve it once; Close ends it and returns the
// log.
type Proxy struct {
	rules    *Rules
	resolver Resolver
	dial     func(ctx context.Context, network, address string) (net.Conn, error)
	onDeny   func(Conn)
	maxConns int
	maxBytes int64
	idle     time.Duration
	budget   atomic.Int64 // bytes left

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	ln      net.Listener
	active  map[net.Conn]bool
	log     []*record
	dropped int
	closed  bool
}

// record is a Conn being served; its counters move while it runs.
type record struct {
	Conn
	start      time.Time
	up, down   atomic.Int64
	mu         sync.Mutex
	errEnd     string
	durationMS int64
}

// String describes the proxy's rules and limits, for a result's
// enforced.egress.
func (p *Proxy) String() string {
	s := "HTTP (CONNECT, absolute URIs) and SOCKS5; allow " + joinRules(p.rules.allow)
	if len(p.rules.deny) > 0 {
		s += "; deny " + joinRules(p.rules.deny)
	}
	return s + fmt.Sprintf("; at most %d connections, %d bytes, idle %s", p.maxConns, p.maxBytes, p.idle)
}

func joinRules(rules []policy.NetRule) string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return strings.Join(out, ",")
}

// New returns a Proxy for cfg; it serves nothing until Serve.
func New(cfg Config) (*Proxy, error) {
	if !httpProxy {
		return nil, &policy.UnsupportedError{Control: "network allow-list",
			Reason: "this airlock was built without its egress proxy (tag airlock_slim: the CLI scripts/build makes, which runs airlock-daemon for --net allow)",
			Fix:    "run it with airlock-daemon, or a build without the airlock_slim tag"}
	}
	rules, err := Compile(cfg.Egress)
	if err != nil {
		return nil, err
	}
	p := &Proxy{rules: rules, resolver: cfg.Resolver, dial: cfg.Dial, onDeny: cfg.OnDeny, active: map[net.Conn]bool{}}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dial == nil {
		p.dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	p.maxConns, p.maxBytes, p.idle = cfg.Egress.Limits()
	p.budget.Store(p.maxBytes)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Serve accepts on ln until Close (or ln fails) and serves each
// connection. ln belongs to p from now on.
func (p *Proxy) Serve(ln net.Listener) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return
	}
	p.ln = ln
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !p.track(c, true) {
			c.Close()
			return
		}
		n := p.serving()
		if n > 2*p.maxConns {
			// Far over the cap: closed unanswered, so that the
			// connections held stay bounded by the cap.
			p.refuse("", "", 0, fmt.Sprintf("more than %d concurrent connections (net.max_connections)", p.maxConns))
			p.track(c, false)
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			if n > p.maxConns {
				p.overCap(c) // no head of it is read or held
				return
			}
			p.serveConn(c)
		}()
	}
}

// overCap refuses a connection over the concurrent cap, in its own
// protocol, reading only its first byte.
func (p *Proxy) overCap(c net.Conn) {
	reason := fmt.Sprintf("more than %d concurrent connections (net.max_connections)", p.maxConns)
	c.SetDeadline(time.Now().Add(time.Second))
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	switch {
	case err != nil:
		p.refuse("", "", 0, reason)
	case b[0] == socksVersion:
		p.refuse("socks5", "", 0, reason)
		c.Write([]byte{socksVersion, socksNoMethod})
	default:
		p.refuse("http", "", 0, reason)
		httpError(c, 403, "airlock: denied: "+reason)
	}
}

// track adds or removes a connection of the sandbox's; false once
// closed.
func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add && p.closed {
		return false
	}
	if add {
		p.active[c] = true
	} else {
		delete(p.active, c)
	}
	return true
}

// Close stops the proxy: its listener and every connection are closed,
// and it returns once they are served, with the log of every connection
// and the number left out of it (past 4096 entries).
func (p *Proxy) Close() ([]Conn, int) {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
	}
	for c := range p.active {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	return p.Log()
}

// serving is the number of connections being served.
func (p *Proxy) serving() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.active)
}

// Log returns the connections so far (those still open with their
// counts so far) and how many were left out.
func (p *Proxy) Log() ([]Conn, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Conn, 0, len(p.log))
	for _, r := range p.log {
		out = append(out, r.snapshot())
	}
	return out, p.dropped
}

func (r *record) snapshot() Conn {
	r.mu.Lock()
	c := r.Conn
	c.BytesUp, c.BytesDown = r.up.Load(), r.down.Load()
	c.Error, c.DurationMS = r.errEnd, r.durationMS
	if c.DurationMS == 0 {
		c.DurationMS = time.Since(r.start).Milliseconds()
	}
	r.mu.Unlock()
	return c
}

// set records the verdict and the address dialled (Log may read them
// meanwhile).
func (r *record) set(verdict, address string) {
	r.mu.Lock()
	r.Verdict, r.Address = verdict, address
	r.mu.Unlock()
}

func (r *record) end(errEnd string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errEnd == "" {
		r.errEnd = errEnd
	}
	if r.durationMS == 0 {
		r.durationMS = max(time.Since(r.start).Milliseconds(), 1)
	}
}

// logRequest adds a request to the log.
func (p *Proxy) logRequest(protocol, host string, port uint16) *record {
	r := &record{Conn: Conn{Host: host, Port: int(port), Protocol: protocol}, start: time.Now()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.log) < maxLog {
		p.log = append(p.log, r)
	} else {
		p.dropped++
	}
	return r
}

// refuse logs a request refused before its destination was judged.
func (p *Proxy) refuse(protocol, host string, port uint16, reason string) {
	r := p.logRequest(protocol, host, port)
	r.set("denied: "+reason, "")
	r.end("")
	if p.onDeny != nil {
		p.onDeny(r.snapshot())
	}
}

// open judges and dials one request. It returns the upstream
// connection, or nil and the record of the denial or failure.
func (p *Proxy) open(protocol, host string, port uint16) (*record, net.Conn) {
	r := p.logRequest(protocol, host, port)
	var d decision
	switch {
	case p.budget.Load() <= 0:
		d = deny("the byte limit is spent (net.max_bytes)")
	default:
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		d = p.rules.decide(ctx, p.resolver, host, port)
		cancel()
	}
	if d.denied != "" {
		r.set("denied: "+d.denied, "")
		r.end("")
		if p.onDeny != nil {
			p.onDeny(r.snapshot())
		}
		return r, nil
	}
	r.set("allowed", "")
	var lastErr error
	for _, a := range d.addrs[:min(len(d.addrs), maxDials)] {
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		c, err := p.dial(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		cancel()
		if err == nil {
			r.set("allowed", a.String())
			return r, c
		}
		lastErr = err
	}
	r.end(fmt.Sprintf("dial: %v", lastErr))
	return r, nil
}

// serveConn serves one connection from the sandbox: SOCKS5 when its
// first byte is 5, HTTP otherwise.
func (p *Proxy) serveConn(c net.Conn) {
	head := &capReader{r: c, left: maxHead}
	br := bufio.NewReader(head)
	c.SetReadDeadline(time.Now().Add(p.idle))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 5 {
		p.serveSOCKS(c, br, head)
	} else {
		p.serveHTTP(c, br, head)
	}
}

// maxHead bounds a request's head (HTTP request line and headers, the
// SOCKS5 greeting and request) and a response's head: the supervisor's
// memory is not the sandbox's to fill.
const maxHead = 64 << 10

// capReader reads at most left bytes while on (the head), then, once
// lifted, without limit (the body, the tunnel).
type capReader struct {
	r      io.Reader
	left   int
	lifted bool
}

var errHeadTooLong = errors.New("egress: request or response head over 64 KiB")

func (c *capReader) Read(b []byte) (int, error) {
	if c.lifted {
		return c.r.Read(b)
	}
	if c.left <= 0 {
		return 0, errHeadTooLong
	}
	n, err := c.r.Read(b[:min(len(b), c.left)])
	c.left -= n
	return n, err
}

func (c *capReader) lift() { c.lifted = true }

// relay copies both ways between the sandbox's connection (with what
// its reader holds already) and upstream, counting bytes, until both
// sides end, the idle timeout passes, the byte budget is spent or the
// proxy closes.
func (p *Proxy) relay(r *record, c net.Conn, br *bufio.Reader, up net.Conn) {
	defer up.Close()
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan string, 2)
	pump := func(dst, src net.Conn, rd func([]byte) (int, error), n *atomic.Int64) {
		buf := make([]byte, 32<<10)
		for {
			src.SetReadDeadline(time.Now().Add(p.idle))
			k, err := rd(buf)
			if k > 0 {
				last.Store(time.Now().UnixNano())
				if p.budget.Add(-int64(k)) < 0 {
					done <- "byte limit"
					return
				}
				n.Add(int64(k))
				if _, werr := dst.Write(buf[:k]); werr != nil {
					done <- ""
					return
				}
			}
			var ne net.Error
			switch {
			case err == nil:
			case errors.As(err, &ne) && ne.Timeout():
				if time.Since(time.Unix(0, last.Load())) < p.idle {
					continue
				}
				done <- "idle timeout"
				return
			default:
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				}
				done <- ""
				return
			}
		}
	}
	go pump(up, c, br.Read, &r.up)
	go pump(c, up, up.Read, &r.down)
	why := <-done
	if why == "" {
		// One side ended: the other may still be sending. A cut (limit)
		// or the proxy's end closes both at once.
		select {
		case why = <-done:
		case <-p.ctx.Done():
			why = "run ended"
		}
	}
	c.Close()
	up.Close()
	if why == "" {
		r.end("")
		return
	}
	r.end(why)
}
