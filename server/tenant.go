package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// A tenant is the credential a request proved, and it owns what the
// request makes: a session is seen, entered and deleted only by its own
// tenant (another gets the 404 of an id that does not exist), and the
// per-tenant limits (Config.TenantMaxSessions, TenantMaxConcurrent)
// count by it. It is one of
//
//   - "token:NAME" (or "token:N", the N-th token of the file, when its
//     line names none): a request that sent one of the server's bearer
//     tokens (RequireTokens, AcceptTokens), over TCP or the unix socket;
//   - "uid:N": a request over a unix socket without a token, by the uid
//     of the process that connected (SO_PEERCRED, recorded by
//     ConnContext);
//   - "local" (LocalTenant): everything else: a TCP request without a
//     token (a loopback listener without --token-file), a request with no
//     connection (httptest), and the direct API (Exec, OpenSession, ...;
//     airlock mcp over stdio is one local client).
//
// The names are disjoint by construction (a token's name has no ':'), and
// never hold a token: they are safe in logs and metrics.
const LocalTenant = "local"

// tenantKey holds the tenant in a request's context.
type tenantKey struct{}

// peerKey holds what ConnContext learnt of a unix connection's peer.
type peerKey struct{}

// peer is a unix connection's peer: its uid, or why it is unknown.
type peer struct {
	uid uint32
	err error
}

// ConnContext records the peer's uid of a unix socket connection
// (SO_PEERCRED) in its context: set it as http.Server.ConnContext of
// every server that serves Handler on a unix socket. A request that came
// over a unix socket without it is refused (500): the server cannot tell
// two local users apart.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, peerOf(uc))
}

// peerOf reads the peer credentials of a unix connection.
func peerOf(c *net.UnixConn) peer {
	rc, err := c.SyscallConn()
	if err != nil {
		return peer{err: err}
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{err: err}
	}
	if serr != nil {
		return peer{err: fmt.Errorf("getsockopt(SO_PEERCRED): %w", serr)}
	}
	return peer{uid: cred.Uid}
}

// uidTenant is the tenant of a unix socket peer.
func uidTenant(uid uint32) string { return "uid:" + strconv.FormatUint(uint64(uid), 10) }

// tenantOf is the tenant r proved: its token's, its unix peer's uid, or
// LocalTenant. The error: a unix request whose peer is unknown.
func tenantOf(r *http.Request) (string, error) {
	if t, ok := r.Context().Value(tenantKey{}).(string); ok {
		return t, nil
	}
	if _, unixConn := r.Context().Value(http.LocalAddrContextKey).(*net.UnixAddr); unixConn {
		p, ok := r.Context().Value(peerKey{}).(peer)
		switch {
		case !ok:
			return "", &policy.SetupError{Stage: "tenant", Err: fmt.Errorf("a request over a unix socket without its peer's uid: the front end serving server.Handler must set http.Server.ConnContext = server.ConnContext")}
		case p.err != nil:
			return "", &policy.SetupError{Stage: "tenant", Err: fmt.Errorf("the unix socket peer's uid: %w", p.err)}
		}
		return uidTenant(p.uid), nil
	}
	return LocalTenant, nil
}

// ctxTenant is the tenant of a direct API call's or a run's context:
// the request's, or LocalTenant.
func ctxTenant(ctx context.Context) string {
	if t, ok := ctx.Value(tenantKey{}).(string); ok {
		return t
	}
	return LocalTenant
}

// withTenant resolves r's tenant into its context (so that admit, which
// sees only the context, counts it), or refuses r.
func (s *Server) withTenant(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := tenantOf(r)
		if err != nil {
			s.fail(w, 0, err, nil)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, t)))
	})
}

// Tokens are the bearer tokens a server takes, each a tenant. Only
// their SHA-256 digests are kept.
type Tokens struct {
	list []token
}

type token struct {
	tenant string
	sum    [sha256.Size]byte
}

// MinTokenLen is the shortest token ParseTokens takes.
const MinTokenLen = 16

// ParseTokens reads a token file: one token a line, as `TOKEN` or
// `NAME TOKEN` (NAME: letters, digits, '.', '_', '-'; the tenant's name
// in logs and metrics), blank lines and lines starting with '#' ignored.
// A token is at least MinTokenLen characters and has no space; tokens
// and names are unique. A bad line is refused naming its number (never
// its text: it may hold a token). At least one token is required.
func ParseTokens(r io.Reader) (*Tokens, error) {
	ts := &Tokens{}
	names := map[string]int{}
	sums := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) (*Tokens, error) {
			return nil, policy.Invalid("--token-file", "line %d: "+format, append([]any{n}, args...)...)
		}
		f := strings.Fields(line)
		var name, tok string
		switch len(f) {
		case 1:
			name, tok = strconv.Itoa(len(ts.list)+1), f[0]
		case 2:
			name, tok = f[0], f[1]
			if !validName(name) {
				return bad("the name may hold only letters, digits, '.', '_' and '-' (want TOKEN or NAME TOKEN)")
			}
		default:
			return bad("%d words; want TOKEN or NAME TOKEN", len(f))
		}
		if len(tok) < MinTokenLen {
			return bad("the token is %d characters; use at least %d (e.g. head -c 32 /dev/urandom | base64)", len(tok), MinTokenLen)
		}
		sum := sha256.Sum256([]byte(tok))
		if m, ok := sums[sum]; ok {
			return bad("the same token as line %d: each token is one tenant", m)
		}
		if m, ok := names[name]; ok {
			return bad("the name %q is line %d's too", name, m)
		}
		sums[sum], names[name] = n, n
		ts.list = append(ts.list, token{tenant: "token:" + name, sum: sum})
	}
	if err := sc.Err(); err != nil {
		return nil, policy.Invalid("--token-file", "%v", err)
	}
	if len(ts.list) == 0 {
		return nil, policy.Invalid("--token-file", "no token in it (one a line: TOKEN or NAME TOKEN)")
	}
	return ts, nil
}

// validName reports whether a token's name is safe in a log line or a
// metric label, and disjoint from the other tenants' names (no ':').
func validName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return s != "" && len(s) <= 64
}

// Len is the number of tokens (0 for nil).
func (ts *Tokens) Len() int {
	if ts == nil {
		return 0
	}
	return len(ts.list)
}

// Tenants lists the tokens' tenants, in the file's order.
func (ts *Tokens) Tenants() []string {
	out := make([]string, len(ts.list))
	for i, t := range ts.list {
		out[i] = t.tenant
	}
	return out
}

// match returns the tenant of cred, or "". Every token is compared,
// each in constant time over digests of equal length: neither which
// token matched nor how much of one did shows in the time taken.
func (ts *Tokens) match(cred string) string {
	sum := sha256.Sum256([]byte(cred))
	found := -1
	for i := range ts.list {
		eq := subtle.ConstantTimeCompare(sum[:], ts.list[i].sum[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return ""
	}
	return ts.list[found].tenant
}
