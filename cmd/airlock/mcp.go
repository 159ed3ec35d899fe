//go:build !airlock_slim

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

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
