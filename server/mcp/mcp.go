package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config configures an MCP.
type Config struct {
	// Server runs everything: the same server.Server airlock serve
	// builds. Required. The caller drains it.
	Server *server.Server
	// MaxRuns bounds the runs one connection has going at once. 0 = 2.
	MaxRuns int
	// MaxSessions bounds the sessions one connection has open. 0 = 4.
	MaxSessions int
	// MaxReturn caps the output (stdout and stderr together) or file
	// content one tool result carries, in bytes. 0 = 64 KiB.
	MaxReturn int
	// ProgressEvery is the interval of progress notifications while a
	// sandbox runs. 0 = 1 s.
	ProgressEvery time.Duration
	// SessionIdle closes an HTTP client's MCP session after that long
	// without a request (and with it the client's sandbox sessions).
	// 0 = 30 minutes.
	SessionIdle time.Duration
	// Version is reported to clients as the server's version.
	Version string
	// Logger receives lifecycle events, never payload data. nil = discard.
	Logger *slog.Logger
}

// MCP serves a server.Server's executor over the Model Context Protocol.
type MCP struct {
	cfg   Config
	srv   *server.Server
	sdk   *sdk.Server
	log   *slog.Logger
	open  bool     // the served policy lets programs reach a network
	tools []string // the tools' names, sorted

	mu      sync.Mutex
	conns   map[*sdk.ServerSession]*conn
	closed  bool
	closing chan struct{}  // closed by Close
	ends    sync.WaitGroup // the goroutines that end connections
}

// conn is one client connection's state.
type conn struct {
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	runs   chan struct{} // one per run going

	mu       sync.Mutex
	sessions map[string]time.Duration // each open session's timeout of a run
	saved    int                      // output files saved so far
	read     map[procKey][2]int64     // where process_output stopped, stdout and stderr
}

// procKey is a process of a session (a pid may be reused once its
// process ended: the handle is the key).
type procKey struct {
	session string
	p       *executor.Process
}

// offsets is where the last process_output of p stopped.
func (c *conn) offsets(session string, p *executor.Process) [2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read[procKey{session, p}]
}

func (c *conn) setOffsets(session string, p *executor.Process, offs [2]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read[procKey{session, p}] = offs
}

// forget drops what c keeps of session (closed).
func (c *conn) forget(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, session)
	for k := range c.read {
		if k.session == session {
			delete(c.read, k)
		}
	}
}

// New returns an MCP for cfg.
func New(cfg Config) (*MCP, error) {
	if cfg.Server == nil {
		return nil, policy.Invalid("server", "an MCP needs a server.Server")
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 2
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 4
	}
	if cfg.MaxReturn <= 0 {
		cfg.MaxReturn = 64 << 10
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &MCP{cfg: cfg, srv: cfg.Server, log: cfg.Logger, conns: map[*sdk.ServerSession]*conn{}, closing: make(chan struct{})}
	p := cfg.Server.Policy()
	m.open = p.Network() == policy.NetHost || p.Network() == policy.NetAllow
	m.sdk = sdk.NewServer(&sdk.Implementation{Name: "airlock", Title: "airlock sandbox", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: instructions, Capabilities: &sdk.ServerCapabilities{}})
	if err := m.addTools(); err != nil {
		return nil, err
	}
	m.addResources()
	m.sdk.AddReceivingMiddleware(m.explainRefusals)
	return m, nil
}

const instructions = `airlock runs code and shell commands in a Linux sandbox (namespaces, seccomp, cgroups): no access to the host's files, network only as the served policy allows.
Use run_code for one-off code (a sandbox that ends with the call). For anything that keeps state, session_open: a sandbox that lives until session_close, its idle timeout or this connection's end, whose /workspace files and background processes last across calls.
In a session: session_run runs a command and waits; process_start starts a background process (a server, a watcher, a REPL) and returns its pid; process_output reads its new output; process_input writes its stdin; process_signal stops it; process_list shows processes and listening ports; http_request sends an HTTP request to a port inside. read_file/write_file/list_files handle files. capabilities lists the languages and limits.
A program's failure (non-zero exit, timeout) is a normal result; a refused call is an error result that says whether retrying can help.`

// Server is the SDK server: run it over stdio (Server().Run(ctx,
// &sdk.StdioTransport{})) or connect it to any SDK transport.
func (m *MCP) Server() *sdk.Server { return m.sdk }

// Handler serves MCP over streamable HTTP (stateful: an MCP session per
// client, closed on DELETE or after Config.SessionIdle), behind
// server.LoopbackGuard: the checks airlock serve makes of a request over
// loopback without a token (a foreign Host, a foreign Origin, a POST
// that is not JSON) stand in for the SDK's own Host check, so that both
// servers answer alike and a request with the token is let through alike.
func (m *MCP) Handler() http.Handler {
	return server.LoopbackGuard(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m.sdk },
		&sdk.StreamableHTTPOptions{SessionTimeout: m.cfg.SessionIdle, DisableLocalhostProtection: true}))
}

// Close ends every connection's state: its runs are cancelled and its
// sessions closed, before Close returns. Later calls are refused.
func (m *MCP) Close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.closing)
	}
	m.mu.Unlock()
	m.ends.Wait()
}

// conn returns the state of ss's connection, made on its first call; it
// ends with the connection.
func (m *MCP) conn(ss *sdk.ServerSession) (*conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("mcp: shutting down: %w", policy.ErrUnavailable)
	}
	if c := m.conns[ss]; c != nil {
		return c, nil
	}
	c := &conn{runs: make(chan struct{}, m.cfg.MaxRuns), sessions: map[string]time.Duration{}, read: map[procKey][2]int64{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	m.conns[ss] = c
	ended := make(chan struct{})
	go func() { ss.Wait(); close(ended) }()
	m.ends.Add(1)
	go func() {
		defer m.ends.Done()
		select {
		case <-ended:
		case <-m.closing:
		}
		m.mu.Lock()
		if m.conns[ss] == c {
			delete(m.conns, ss)
		}
		m.mu.Unlock()
		m.end(c)
	}()
	return c, nil
}

// end cancels c's runs and closes its sessions.
func (m *MCP) end(c *conn) {
	c.cancel()
	c.mu.Lock()
	ids := c.sessions
	c.sessions = map[string]time.Duration{}
	c.read = map[procKey][2]int64{}
	c.mu.Unlock()
	for id := range ids {
		m.srv.CloseSession(id)
	}
	if len(ids) > 0 {
		m.log.Info("mcp connection ended", "sessions_closed", len(ids))
	}
}

// busy is the refusal of a run past a connection's MaxRuns.
type busy struct{ n int }

func (b busy) Error() string {
	return fmt.Sprintf("mcp: this connection already has %d runs going (the most it may); wait for one to finish", b.n)
}
func (busy) Is(target error) bool { return target == policy.ErrUnavailable }

// startRun takes one of c's run slots; ctx is cancelled when the call is
// cancelled or the connection ends.
func (m *MCP) startRun(ctx context.Context, c *conn) (context.Context, func(), error) {
	select {
	case c.runs <- struct{}{}:
	default:
		return nil, nil, busy{m.cfg.MaxRuns}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel(); <-c.runs }, nil
}

// owns checks that id is a session of c.
func (c *conn) owns(id string) error {
	_, err := c.runTimeout(id)
	return err
}

// runTimeout is the timeout of a run in c's session id: session_open's,
// or the served one.
func (c *conn) runTimeout(id string) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.sessions[id]
	if !ok {
		return 0, policy.Invalid("session", "no open session %q on this connection (closed, timed out idle, or never made: session_open makes one)", id)
	}
	return t, nil
}
