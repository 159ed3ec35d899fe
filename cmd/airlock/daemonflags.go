package main

import (
	"flag"
	"io"
	"time"
)

// The flags of airlock serve and airlock mcp, built into every airlock
// (help and completion list them); the daemons themselves (serve.go,
// mcp.go) are left out of the CLI scripts/build makes, which execs
// airlock-daemon for them (daemon_slim.go).

const serveUsage = `usage: airlock serve [--listen unix:PATH|tcp:HOST:PORT]... [--token-file F] [serve flags] [run flags]

Serves the executor over HTTP (API: api/openapi.yaml; docs/serve.md). The
run flags set the served policy: each request's defaults and the ceiling of
its limits (a request may tighten them, never loosen them).`

type serveFlags struct {
	listen                         listFlag
	tokenFile, workDir, maxRequest string
	maxConcurrent, maxQueue, pool  int
	maxSessions, reuse             int
	tenantMaxSessions              int
	tenantMaxConcurrent            int
	socketGroup                    string
	sessionIdle, drain             time.Duration
	// Live sandboxes (docs/sandboxes.md).
	maxSandboxes, tenantMaxSandboxes, sandboxMaxProcesses int
	sandboxPool                                           int
	maxSandboxBuffer, tenantMaxSandboxBuffer              string
	sandboxMaxLifetime                                    time.Duration
}

// serveFlagSet is serve's flag set: the run flags (the served policy)
// and the server's own.
func serveFlagSet(stderr io.Writer) (*flag.FlagSet, *runFlags, *serveFlags) {
	return serverFlagSet("serve", serveUsage, "(repeatable; default unix:$XDG_RUNTIME_DIR/airlock.sock, or unix:/run/airlock.sock as root)", stderr)
}

// serverFlagSet is the flag set of serve and mcp, which serve the same
// server: the run flags and the server's own.
func serverFlagSet(name, usage, listenDefault string, stderr io.Writer) (*flag.FlagSet, *runFlags, *serveFlags) {
	fs, f := runFlagSet(name, usage, stderr)
	for _, n := range idleRunFlags {
		fs.Lookup(n.name).Usage = "refused by airlock " + name + ": " + n.why
	}
	var sf serveFlags
	fs.Var(&sf.listen, "listen", "`unix:PATH` or `tcp:HOST:PORT` "+listenDefault)
	fs.StringVar(&sf.tokenFile, "token-file", "", "`file` of bearer tokens, one a line (TOKEN or NAME TOKEN, # comments), each a tenant; TCP requests must send one (required off loopback); read at start")
	fs.StringVar(&sf.socketGroup, "socket-group", "", "`group` (name or gid) given the unix sockets, mode 0660 (default: none, mode 0600); each peer uid is a tenant")
	fs.IntVar(&sf.maxConcurrent, "max-concurrent", 0, "sandboxes running at once (default the number of CPUs)")
	fs.IntVar(&sf.maxQueue, "max-queue", 0, "requests waiting for a slot before 429 (default 4 x --max-concurrent)")
	fs.StringVar(&sf.maxRequest, "max-request", "16MiB", "largest request body")
	fs.IntVar(&sf.maxSessions, "max-sessions", 64, "open sessions at most")
	// A tenant is a token, or a unix socket peer's uid (docs/serve.md,
	// "Tenants"); airlock mcp's direct calls are all one tenant, bounded
	// per connection by its --conn-* flags instead.
	tenantSessions := 32
	if name == "mcp" {
		tenantSessions = 0
	}
	fs.IntVar(&sf.tenantMaxSessions, "tenant-max-sessions", tenantSessions, "open sessions of one tenant (a token, or a unix socket peer uid) at most (0 = --max-sessions)")
	fs.IntVar(&sf.tenantMaxConcurrent, "tenant-max-concurrent", 0, "runs of one tenant running or queued at once before 429 (0 = no cap beyond --max-concurrent and --max-queue)")
	fs.DurationVar(&sf.sessionIdle, "session-idle", 10*time.Minute, "a session's idle timeout (and the most a session may ask for)")
	fs.IntVar(&sf.maxSandboxes, "max-sandboxes", 64, "live sandboxes open at most (docs/sandboxes.md)")
	tenantSandboxes, tenantBuffer := 16, "1GiB"
	if name == "mcp" {
		tenantSandboxes, tenantBuffer = 0, "0"
	}
	fs.IntVar(&sf.tenantMaxSandboxes, "tenant-max-sandboxes", tenantSandboxes, "live sandboxes of one tenant open at most (0 = --max-sandboxes)")
	fs.IntVar(&sf.sandboxMaxProcesses, "sandbox-max-processes", 64, "processes running at once in one live sandbox, started through the API")
	fs.StringVar(&sf.maxSandboxBuffer, "max-sandbox-buffer", "4GiB", "output the live sandboxes' processes may hold buffered in all (each process's two streams, up to max_output each)")
	fs.StringVar(&sf.tenantMaxSandboxBuffer, "tenant-max-sandbox-buffer", tenantBuffer, "the same, of one tenant's sandboxes (0 = --max-sandbox-buffer)")
	fs.IntVar(&sf.sandboxPool, "sandbox-pool", 2, "live sandboxes kept prepared for the served policy (a create that tightens nothing takes one; 0 = none)")
	fs.DurationVar(&sf.sandboxMaxLifetime, "sandbox-max-lifetime", 24*time.Hour, "the longest lifetime a live sandbox may ask for (its idle timeout's longest is --session-idle)")
	fs.IntVar(&sf.pool, "pool", -1, "warm pool size (default --max-concurrent; 0 = none)")
	fs.IntVar(&sf.reuse, "reuse", 1, "requests one pooled sandbox may serve, reset between them (docs/serve.md: only for requests that may share a sandbox; 1 = a sandbox per request)")
	fs.DurationVar(&sf.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long running requests may finish before they are killed")
	fs.StringVar(&sf.workDir, "work-dir", "", "`dir` for workspaces, locked by this server; leftovers of a killed server are removed at start (default $TMPDIR/airlock-"+name+"-UID)")
	return fs, f, &sf
}

// idleRunFlags are the run flags serve and mcp parse (they share run's
// flag set) but could only ignore: given, they are refused, naming why
// (startServed), and the help says so.
var idleRunFlags = []struct{ name, why string }{
	{"json", "every answer is JSON already (a run's is the result airlock run --json prints)"},
	{"tty", "a served program has no terminal to relay to (a request brings its stdin and gets its output back); airlock run --tty is for interactive programs"},
	{"verbose", "the connections --net allow refused are in each result's network field, for its client (airlock run --verbose prints them)"},
	{"kill-grace", "no signal is passed on to a served run: it ends by its request (its timeout, its client leaving, the drain deadline) and is killed then"},
}

const mcpUsage = `usage: airlock mcp [--listen unix:PATH|tcp:HOST:PORT]... [--token-file F] [mcp flags] [serve flags] [run flags]

Serves the executor to agents over the Model Context Protocol (docs/mcp.md):
over stdin/stdout by default (register "airlock mcp" as a command in the
agent's MCP client), or over streamable HTTP on each --listen (the same
listen and token rules as airlock serve; GET /metrics there is serve's
Prometheus metrics). Tools: run_code, session_open,
session_run, session_close, read_file, write_file, list_files,
capabilities. The run flags set the served policy, as for airlock serve.`

type mcpFlags struct {
	maxRuns, maxSessions int
	maxReturn            string
	idle                 time.Duration
}

// mcpFlagSet is mcp's flag set: serve's, and the limits of each client
// connection.
func mcpFlagSet(stderr io.Writer) (*flag.FlagSet, *runFlags, *serveFlags, *mcpFlags) {
	fs, f, sf := serverFlagSet("mcp", mcpUsage, "(repeatable; default: stdio, no listener)", stderr)
	var mf mcpFlags
	fs.IntVar(&mf.maxRuns, "conn-max-runs", 2, "runs one client connection may have going at once")
	fs.IntVar(&mf.maxSessions, "conn-max-sessions", 4, "sessions one client connection may have open")
	fs.StringVar(&mf.maxReturn, "conn-max-return", "64KiB", "output or file bytes in one tool result (past it output is cut, and saved in the session)")
	fs.DurationVar(&mf.idle, "conn-idle", 30*time.Minute, "over HTTP, an MCP session's idle timeout (its sandbox sessions close with it)")
	return fs, f, sf, &mf
}
