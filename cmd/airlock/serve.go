//go:build !airlock_slim

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
	"golang.org/x/sys/unix"
)

// serveCmd implements `airlock serve`: listeners, the executor with its
// warm pool, the server; SIGTERM or SIGINT drains and exits 0.
func serveCmd(args []string, stdout, stderr io.Writer) int {
	// A refusal at start, a bad flag included: one line saying whether a
	// retry can help, and the exit code of its class (125, or 75 when
	// transient), as run's.
	fail := func(err error) int { return usageError(stdout, stderr, err) }
	fs, f, sf := serveFlagSet(stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		if err == errHelp {
			return 0
		}
		return fail(err)
	}
	if fs.NArg() > 0 {
		return fail(policy.Invalid("serve", "takes no arguments, got %q; usage: airlock serve [--listen ADDR]... [flags]", fs.Arg(0)))
	}
	if len(sf.listen) == 0 {
		def, err := defaultSocket()
		if err != nil {
			return fail(err)
		}
		sf.listen = listFlag{"unix:" + def}
	}
	sv, code := startServed("serve", f, sf, stderr)
	if sv == nil {
		return code
	}
	defer sv.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sv.serveHTTP(ctx, stop, sv.srv.Handler); err != nil {
		return fail(err)
	}
	return 0
}

// failStart is a refusal at start, as run's: one stderr line saying
// whether a retry can help, and the exit code of its class (125, or 75
// when transient).
func failStart(err error, stderr io.Writer) int { return usageError(io.Discard, stderr, err) }

// daemon is what serve and mcp build: the listeners, the executor with
// its warm pool, and the server.
type daemon struct {
	ex     *executor.Executor
	srv    *server.Server
	log    *slog.Logger
	sf     *serveFlags
	tokens *server.Tokens // nil without --token-file
	lns    []listener
	pool   int
	unlock func()
}

// startServed checks the flags, opens sf's listeners, locks the work
// dir and starts the executor and the server. On failure it returns nil
// and the exit code, having said why.
func startServed(name string, f *runFlags, sf *serveFlags, stderr io.Writer) (*daemon, int) {
	sv := &daemon{sf: sf, log: slog.New(slog.NewTextHandler(stderr, nil)), unlock: func() {}}
	fail := func(err error) (*daemon, int) {
		sv.close()
		return nil, failStart(err, stderr)
	}
	for _, n := range idleRunFlags {
		if f.given(n.name) {
			return fail(policy.Invalid("--"+n.name, "airlock %s does nothing with it: %s; leave it out", name, n.why))
		}
	}
	p, err := f.policy()
	if err != nil {
		return fail(err)
	}
	if p.Workspace != "" {
		return fail(policy.Invalid("--workspace", "the server makes a workspace for each run and session; leave it out"))
	}
	// A daemon serving many runs at once uses every CPU (process() set one
	// for a single run).
	runtime.GOMAXPROCS(runtime.NumCPU())
	if sf.maxConcurrent <= 0 {
		sf.maxConcurrent = runtime.NumCPU()
	}
	if sf.pool < 0 {
		sf.pool = sf.maxConcurrent
	}
	if sf.reuse < 1 {
		return fail(policy.Invalid("--reuse", "%d: want 1 (a sandbox per request) or more", sf.reuse))
	}
	maxReq, err := policy.ParseSize(sf.maxRequest)
	if err != nil || maxReq <= 0 {
		return fail(policy.Invalid("--max-request", "%q: want a positive size like 16MiB", sf.maxRequest))
	}
	var sbBuf [2]policy.Size
	for i, v := range []struct{ flag, val string }{{"--max-sandbox-buffer", sf.maxSandboxBuffer}, {"--tenant-max-sandbox-buffer", sf.tenantMaxSandboxBuffer}} {
		if sbBuf[i], err = policy.ParseSize(v.val); err != nil || (i == 0 && sbBuf[i] <= 0) {
			return fail(policy.Invalid(v.flag, "%q: want a positive size like 1GiB", v.val))
		}
	}
	if sv.tokens, err = readTokens(sf.tokenFile); err != nil {
		return fail(err)
	}
	gid, err := socketGroup(sf.socketGroup)
	if err != nil {
		return fail(err)
	}
	work, unlock, err := lockWorkDir(name, sf.workDir)
	if err != nil {
		return fail(err)
	}
	sv.unlock = unlock
	// Listeners before the executor: a bad address fails before any
	// sandbox is prepared.
	for _, addr := range sf.listen {
		l, err := listen(addr, sv.tokens != nil, gid)
		if err != nil {
			return fail(err)
		}
		sv.lns = append(sv.lns, l)
	}
	cfg := cliConfig(cacheDir())
	cfg.Logger, cfg.WorkDir = sv.log, work
	// A served program is a client's, not this daemon's caller's: it
	// starts with every signal at its default and none blocked, however
	// the daemon was started (under nohup, by a shell that ignored
	// SIGPIPE, ...), as a process a service starts should.
	cfg.SetSignals, cfg.SignalsIgnored, cfg.SignalsBlocked = true, 0, 0
	cfg.Pool = executor.PoolConfig{Size: sf.pool, Policy: p, Refill: min(sf.pool, 2), Reuse: sf.reuse, Live: max(sf.sandboxPool, 0)}
	if p.Backend == "process" {
		cfg.Pool.Live = 0 // a live sandbox is the jail's (NewSandbox refuses the process backend)
	}
	ex, err := executor.New(cfg)
	var inv *policy.InvalidError
	if errors.As(err, &inv) && inv.Field == "pool" {
		// The process backend has no jail to prepare: no pool.
		sv.log.Warn("no warm pool", "reason", inv.Reason)
		cfg.Pool = executor.PoolConfig{}
		ex, err = executor.New(cfg)
	}
	if err != nil {
		return fail(err)
	}
	sv.ex, sv.pool = ex, cfg.Pool.Size
	warnWeakened(p, stderr)
	sv.srv, err = server.New(server.Config{Executor: ex, Policy: p, MaxConcurrent: sf.maxConcurrent, MaxQueue: sf.maxQueue,
		MaxRequest: int64(maxReq), MaxSessions: sf.maxSessions, TenantMaxSessions: sf.tenantMaxSessions, TenantMaxConcurrent: sf.tenantMaxConcurrent,
		SessionIdle: sf.sessionIdle, Logger: sv.log,
		MaxSandboxes: sf.maxSandboxes, TenantMaxSandboxes: sf.tenantMaxSandboxes, SandboxMaxProcesses: sf.sandboxMaxProcesses,
		MaxSandboxBuffer: int64(sbBuf[0]), TenantMaxSandboxBuffer: int64(sbBuf[1]), SandboxMaxLifetime: sf.sandboxMaxLifetime})
	if err != nil {
		return fail(err)
	}
	return sv, 0
}

// close closes the listeners and the executor and unlocks the work dir.
func (sv *daemon) close() {
	for _, l := range sv.lns {
		l.ln.Close()
	}
	sv.lns = nil
	if sv.ex != nil {
		if err := sv.ex.Close(); err != nil {
			sv.log.Warn("closing the executor", "error", err)
		}
		sv.ex = nil
	}
	sv.unlock()
	sv.unlock = func() {}
}

// serveHTTP serves handler() on every listener (behind the bearer tokens
// on TCP when there are some; without them, the server's LoopbackGuard
// checks each TCP request; on a unix socket a token is optional, and a
// request without one is its peer uid's tenant) until ctx ends or one fails; then, stop
// called (a second signal kills at once), it drains: the server's runs
// finish or are killed at the drain deadline while the listeners still
// answer (a new run, and /healthz, get 503), then the HTTP servers shut
// down.
func (sv *daemon) serveHTTP(ctx context.Context, stop func(), handler func() http.Handler) error {
	var https []*http.Server
	errc := make(chan error, len(sv.lns))
	for _, l := range sv.lns {
		h := handler()
		switch {
		case sv.tokens != nil && l.tcp:
			h = server.RequireTokens(sv.tokens, h)
		case sv.tokens != nil:
			h = server.AcceptTokens(sv.tokens, h)
		}
		// ConnContext: each unix connection's peer uid, its tenant.
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, ConnContext: server.ConnContext,
			ErrorLog: slog.NewLogLogger(sv.log.Handler(), slog.LevelDebug)}
		https = append(https, hs)
		go func(ln net.Listener) { errc <- hs.Serve(ln) }(l.ln)
		sv.log.Info("listening", "address", l.name, "pool", sv.pool, "max_concurrent", sv.sf.maxConcurrent, "tokens", sv.tokens.Len())
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		sv.log.Error("serving", "error", err)
	}
	stop()
	sv.drain(func() {
		// The runs are over (finished or killed): what is left is their
		// answers being written, and idle or streaming connections.
		var wg sync.WaitGroup
		for _, hs := range https {
			wg.Go(func() {
				sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
				defer c()
				hs.Shutdown(sctx)
			})
		}
		wg.Wait()
	})
	return nil
}

// drain drains the server (runs finish, or are killed at --drain-timeout;
// the listeners stay open meanwhile, so that /healthz says 503 and a new
// run is refused with a retryable 503 rather than a refused connection),
// then runs shutdown and closes the executor.
func (sv *daemon) drain(shutdown func()) {
	sv.log.Info("draining", "timeout", sv.sf.drain)
	dctx, cancel := context.WithTimeout(context.Background(), sv.sf.drain)
	defer cancel()
	if err := sv.srv.Drain(dctx); err != nil {
		sv.log.Warn("drain deadline passed: running requests were killed")
	}
	shutdown()
	sv.close()
	sv.log.Info("stopped")
}

type listener struct {
	ln   net.Listener
	name string
	tcp  bool
}

// listen opens unix:PATH (mode 0600, or 0660 and group gid when gid >=
// 0; a stale socket is replaced, a live one refused) or tcp:HOST:PORT
// (refused off loopback without a token).
func listen(addr string, token bool, gid int) (listener, error) {
	kind, rest, ok := strings.Cut(addr, ":")
	switch {
	case ok && kind == "unix" && rest != "":
		if c, err := net.Dial("unix", rest); err == nil {
			c.Close()
			return listener{}, policy.Invalid("--listen", "%s: another server is listening there", rest)
		} else if errors.Is(err, syscall.ECONNREFUSED) {
			os.Remove(rest) // a dead server's socket
		}
		old := unix.Umask(0o177)
		ln, err := net.Listen("unix", rest)
		unix.Umask(old)
		if err != nil {
			return listener{}, policy.Invalid("--listen", "%v", err)
		}
		if err := os.Chmod(rest, 0o600); err != nil {
			ln.Close()
			return listener{}, policy.Invalid("--listen", "%v", err)
		}
		// The group after the owner-only mode: the socket is never open
		// to a group it is not yet given.
		if gid >= 0 {
			if err := os.Chown(rest, -1, gid); err != nil {
				ln.Close()
				return listener{}, policy.Invalid("--socket-group", "%v", err)
			}
			if err := os.Chmod(rest, 0o660); err != nil {
				ln.Close()
				return listener{}, policy.Invalid("--socket-group", "%v", err)
			}
		}
		return listener{ln: ln, name: addr}, nil
	case ok && kind == "tcp" && rest != "":
		host, _, err := net.SplitHostPort(rest)
		if err != nil {
			return listener{}, policy.Invalid("--listen", "%q: %v", addr, err)
		}
		ip := net.ParseIP(host)
		loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
		if !loopback && !token {
			return listener{}, &policy.InvalidError{Field: "--token-file", Reason: fmt.Sprintf("required to listen on %s, which is not a loopback address: anyone who reaches it could run code", rest)}
		}
		ln, err := net.Listen("tcp", rest)
		if err != nil {
			return listener{}, policy.Invalid("--listen", "%v", err)
		}
		return listener{ln: ln, name: "tcp:" + ln.Addr().String(), tcp: true}, nil
	}
	return listener{}, policy.Invalid("--listen", "%q: want unix:PATH or tcp:HOST:PORT", addr)
}

// defaultSocket is /run/airlock.sock as root, else
// $XDG_RUNTIME_DIR/airlock.sock.
func defaultSocket() (string, error) {
	if os.Getuid() == 0 {
		return "/run/airlock.sock", nil
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "airlock.sock"), nil
	}
	return "", policy.Invalid("--listen", "XDG_RUNTIME_DIR is not set; give --listen unix:PATH")
}

// readTokens reads the bearer tokens, each a tenant (nil without a
// file; the format is server.ParseTokens'). The file must not be
// readable by others. It is read once, at start: a change takes a
// restart.
func readTokens(path string) (*server.Tokens, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, policy.Invalid("--token-file", "%v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, policy.Invalid("--token-file", "%v", err)
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return nil, policy.Invalid("--token-file", "%s is readable by every user (mode %v); chmod o-r it", path, fi.Mode().Perm())
	}
	ts, err := server.ParseTokens(f)
	if err != nil {
		var inv *policy.InvalidError
		if errors.As(err, &inv) {
			inv.Reason = path + ": " + inv.Reason
		}
		return nil, err
	}
	return ts, nil
}

// socketGroup resolves --socket-group (a name or a number; -1 without).
func socketGroup(g string) (int, error) {
	if g == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(g); err == nil && n >= 0 {
		return n, nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return -1, policy.Invalid("--socket-group", "%v", err)
	}
	n, err := strconv.Atoi(gr.Gid)
	if err != nil {
		return -1, policy.Invalid("--socket-group", "group %s has gid %q", g, gr.Gid)
	}
	return n, nil
}

// lockWorkDir makes (mode 0711: the sandbox's host uid must reach the
// workspaces inside) and locks the server's work directory, then removes
// what a killed server left in it. Another live server's lock is refused.
func lockWorkDir(name, dir string) (string, func(), error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "airlock-"+name+"-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, policy.Invalid("--work-dir", "%v", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", nil, policy.Invalid("--work-dir", "%v", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st == nil || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", nil, policy.Invalid("--work-dir", "%s must be a directory owned by uid %d and writable by it alone", dir, os.Getuid())
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", nil, policy.Invalid("--work-dir", "%v", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", nil, policy.Invalid("--work-dir", "%v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return "", nil, policy.Invalid("--work-dir", "%s is in use by another airlock serve or mcp (%v); give each its own --work-dir", dir, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != ".lock" {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return dir, func() { lock.Close() }, nil
}
