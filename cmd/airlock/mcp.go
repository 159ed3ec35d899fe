package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// mcpCmd implements `airlock mcp`: the server airlock serve builds,
// behind MCP over stdio or streamable HTTP. stdin's end (stdio), SIGTERM
// or SIGINT ends it: runs are cancelled, sessions closed; exit 0.
func mcpCmd(args []string, stdout, stderr io.Writer) int {
	fs, f, sf, mf := mcpFlagSet(stderr)
	// A bad flag or argument is refused as run's are (125, the retry
	// hint); --help goes to stdout, which serves nothing yet.
	if err := parseFlags(fs, args, stdout); err != nil {
		if err == errHelp {
			return 0
		}
		return usageError(stdout, stderr, err)
	}
	if fs.NArg() > 0 {
		return usageError(stdout, stderr, policy.Invalid("mcp", "takes no arguments, got %q; usage: airlock mcp [--listen ADDR]... [flags]", fs.Arg(0)))
	}
	maxReturn, err := policy.ParseSize(mf.maxReturn)
	if err != nil || maxReturn <= 0 || maxReturn > 1<<30 {
		return failStart(policy.Invalid("--conn-max-return", "%q: want a positive size like 64KiB", mf.maxReturn), stderr)
	}
	sv, code := startServed("mcp", f, sf, stderr)
	if sv == nil {
		return code
	}
	defer sv.close()
	m, err := mcp.New(mcp.Config{Server: sv.srv, MaxRuns: mf.maxRuns, MaxSessions: mf.maxSessions, MaxReturn: int(maxReturn),
		SessionIdle: mf.idle, Version: mcpVersion(), Logger: sv.log})
	if err != nil {
		return failStart(err, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(sv.lns) > 0 {
		err := sv.serveHTTP(ctx, func() { stop(); m.Close() }, func() http.Handler {
			// MCP at every path but GET /metrics: the server's Prometheus
			// metrics, as airlock serve has them (behind the same token).
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", sv.srv.Metrics())
			mux.Handle("/", m.Handler())
			return mux
		})
		if err != nil {
			return failStart(err, stderr)
		}
		return 0
	}
	sv.log.Info("serving MCP on stdio", "pool", sv.pool, "max_concurrent", sf.maxConcurrent)
	err = m.Server().Run(ctx, &sdk.StdioTransport{})
	if err != nil && ctx.Err() == nil {
		sv.log.Info("stdio session ended", "reason", err)
	}
	stop()
	m.Close()
	sv.drain(func() {})
	return 0
}

// mcpVersion is the version reported to MCP clients: the module's, or
// the commit scripts/build stamped.
func mcpVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	if commit != "" {
		return "devel-" + commit
	}
	return "devel"
}
