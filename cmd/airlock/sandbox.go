//go:build !airlock_slim

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	client "github.com/airlock-sandbox/airlock/clients/go"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// airlock sandbox: a docker-like client of a running airlock serve's
// live sandboxes (docs/sandboxes.md). It reaches the server at --server
// (unix:PATH or http(s)://HOST:PORT), else $AIRLOCK_SERVER, else the
// socket airlock serve listens on by default; its bearer token is
// --token-file's first token, else $AIRLOCK_TOKEN, else none (over the
// unix socket the server knows the caller by its uid).

// sandboxCmd runs airlock sandbox ARGS.
func sandboxCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, sandboxUsage)
		return exitSetup
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, sandboxUsage)
		return 0
	case "create", "exec", "ps", "ls", "logs", "kill", "rm", "cp":
	default:
		return usageError(stdout, stderr, policy.Invalid("sandbox", "unknown command %q; the commands: create, exec, ps, ls, logs, kill, rm, cp (airlock sandbox --help)", sub))
	}
	fs := flag.NewFlagSet("sandbox "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), sandboxUsage); fs.PrintDefaults() }
	var server, tokenFile string
	fs.StringVar(&server, "server", "", "`unix:PATH` or http(s)://HOST:PORT of airlock serve (default $AIRLOCK_SERVER, else its default socket)")
	fs.StringVar(&tokenFile, "token-file", "", "`file` whose first token is sent as the bearer token (default $AIRLOCK_TOKEN)")
	sc := &sandboxCLI{stdin: stdin, stdout: stdout, stderr: stderr}
	var run func(fs *flag.FlagSet) error
	switch sub {
	case "create":
		run = sc.createFlags(fs)
	case "exec":
		run = sc.execFlags(fs)
	case "ps":
		run = sc.psFlags(fs)
	case "ls":
		run = sc.lsFlags(fs)
	case "logs":
		run = sc.logsFlags(fs)
	case "kill":
		run = sc.killFlags(fs)
	case "rm":
		run = sc.rmFlags(fs)
	case "cp":
		run = sc.cpFlags(fs)
	}
	if sub == "exec" {
		rest = splitShortFlags(rest)
	}
	if err := parseFlags(fs, rest, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		return usageError(stdout, stderr, err)
	}
	c, addr, err := sandboxClient(server, tokenFile)
	if err != nil {
		return usageError(stdout, stderr, err)
	}
	defer c.Close()
	sc.c, sc.addr = c, addr
	sc.ctx, sc.stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer sc.stop()
	if err := run(fs); err != nil {
		var ex exitError
		if errors.As(err, &ex) {
			return int(ex)
		}
		return usageError(stdout, stderr, sc.explain(err))
	}
	return 0
}

// splitShortFlags spells docker's combined short flags (-it, -dit) as
// the flag package reads them (-i -t), up to the first argument that is
// not a flag.
func splitShortFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && strings.Trim(a[1:], "itd") == "" {
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
			continue
		}
		out = append(out, a)
		switch strings.TrimLeft(a, "-") {
		case "e", "env", "w", "workdir", "timeout", "server", "token-file":
			if i+1 < len(args) { // the flag's value
				i++
				out = append(out, args[i])
			}
		}
	}
	return out
}

// exitError is a process's exit code, passed on as the command's.
type exitError int

func (e exitError) Error() string { return "exit " + strconv.Itoa(int(e)) }

type sandboxCLI struct {
	c              *client.Client
	addr           string
	ctx            context.Context
	stop           func()
	stdin          io.Reader
	stdout, stderr io.Writer
}

// servedError is a server's error response as one line: its message and
// its fix, its class kept.
type servedError struct{ e *client.Error }

func (s servedError) Error() string {
	msg := s.e.Message
	if s.e.Fix != "" && !strings.Contains(msg, s.e.Fix) {
		msg += " (fix: " + s.e.Fix + ")"
	}
	return "airlock serve: " + msg
}

func (s servedError) Unwrap() error { return s.e }

// explain turns a client error into what the CLI prints: the server's
// own message, or a connection failure naming the address (transient:
// the server may be starting).
func (sc *sandboxCLI) explain(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		return servedError{ce}
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("cannot reach airlock serve at %s: %v (start airlock serve, or name it with --server or $AIRLOCK_SERVER): %w", sc.addr, err, policy.ErrUnavailable)
	}
	if errors.Is(err, policy.ErrInvalid) || errors.Is(err, policy.ErrUnavailable) || errors.Is(err, policy.ErrUnsupported) {
		return err
	}
	return fmt.Errorf("airlock sandbox: %v: %w", err, policy.ErrUnavailable)
}

// sandboxClient is the client of --server (or its defaults) with the
// token of --token-file (or $AIRLOCK_TOKEN).
func sandboxClient(server, tokenFile string) (*client.Client, string, error) {
	if server == "" {
		server = os.Getenv("AIRLOCK_SERVER")
	}
	if server == "" {
		switch {
		case os.Getuid() == 0:
			server = "unix:/run/airlock.sock"
		case os.Getenv("XDG_RUNTIME_DIR") != "":
			server = "unix:" + filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "airlock.sock")
		default:
			return nil, "", policy.Invalid("--server", "no server named: XDG_RUNTIME_DIR is not set; give --server unix:PATH or http://HOST:PORT, or set AIRLOCK_SERVER")
		}
	}
	token := os.Getenv("AIRLOCK_TOKEN")
	if tokenFile != "" {
		data, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, "", policy.Invalid("--token-file", "%v", err)
		}
		token = ""
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || strings.HasPrefix(f[0], "#") {
				continue
			}
			token = f[len(f)-1] // TOKEN, or NAME TOKEN
			break
		}
		if token == "" {
			return nil, "", policy.Invalid("--token-file", "%s holds no token", tokenFile)
		}
	}
	addr := server
	if strings.HasPrefix(server, "tcp:") {
		server = "http://" + strings.TrimPrefix(server, "tcp:")
	}
	c, err := client.New(server, token)
	if err != nil {
		return nil, "", policy.Invalid("--server", "%q: want unix:PATH or http(s)://HOST:PORT", addr)
	}
	return c, addr, nil
}

// args checks the positional arguments' count.
func args(fs *flag.FlagSet, min, max int, what string) ([]string, error) {
	a := fs.Args()
	if len(a) < min || (max >= 0 && len(a) > max) {
		return nil, policy.Invalid(fs.Name(), "usage: airlock %s %s", fs.Name(), what)
	}
	return a, nil
}

// kvFlag is a repeatable K=V flag.
type kvFlag map[string]string

func (m kvFlag) String() string { return "" }
func (m kvFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE", v)
	}
	m[k] = val
	return nil
}

func (sc *sandboxCLI) createFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	var memory, maxOutput, fileSize, net, cpuTime, procTimeout, name string
	var pids, openFiles int
	var cpus float64
	var idle, life time.Duration
	env, labels := kvFlag{}, kvFlag{}
	fs.StringVar(&memory, "memory", "", "the sandbox's memory limit, all its processes together (`SIZE`; default the server's)")
	fs.IntVar(&pids, "pids", 0, "its processes at most, all together (default the server's)")
	fs.Float64Var(&cpus, "cpus", 0, "its CPU cores (default the server's)")
	fs.StringVar(&cpuTime, "cpu-time", "", "each process's CPU-time budget (`DUR`)")
	fs.StringVar(&fileSize, "file-size", "", "largest file a process may write (`SIZE`)")
	fs.IntVar(&openFiles, "open-files", 0, "open files per process")
	fs.StringVar(&maxOutput, "max-output", "", "output kept per stream of each process (`SIZE`)")
	fs.StringVar(&net, "net", "", "none|loopback|host (at most as open as the server's)")
	fs.StringVar(&procTimeout, "process-timeout", "", "a foreground process's longest run (`DUR`; the policy's timeout)")
	fs.Var(env, "setenv", "`K=V` in every process's environment (repeatable)")
	fs.DurationVar(&idle, "idle-timeout", 0, "closed after this long with no call on it (default 5m)")
	fs.DurationVar(&life, "timeout", 0, "its lifetime (default 1h); airlock serve's --sandbox-max-lifetime bounds it")
	fs.StringVar(&name, "name", "", "a name, kept as the label name=NAME")
	fs.Var(labels, "label", "`K=V` kept with it (repeatable)")
	return func(fs *flag.FlagSet) error {
		if _, err := args(fs, 0, 0, "create [flags]"); err != nil {
			return err
		}
		var p policy.Policy
		size := func(flag, v string, dst *policy.Size) error {
			if v == "" {
				return nil
			}
			n, err := policy.ParseSize(v)
			if err != nil {
				return policy.Invalid("--"+flag, "%v", err)
			}
			*dst = n
			return nil
		}
		dur := func(flag, v string, dst *policy.Duration) error {
			if v == "" {
				return nil
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return policy.Invalid("--"+flag, "%q: want a positive duration such as 30s", v)
			}
			*dst = policy.Duration(d)
			return nil
		}
		for _, err := range []error{size("memory", memory, &p.Memory), size("max-output", maxOutput, &p.MaxOutput), size("file-size", fileSize, &p.FileSize),
			dur("cpu-time", cpuTime, &p.CPUTime), dur("process-timeout", procTimeout, &p.Timeout)} {
			if err != nil {
				return err
			}
		}
		p.Pids, p.OpenFiles, p.CPUs, p.Net = pids, openFiles, cpus, policy.Net(net)
		if len(env) > 0 {
			p.Setenv = env
		}
		if name != "" {
			labels["name"] = name
		}
		_, info, err := sc.c.CreateSandbox(sc.ctx, client.SandboxConfig{Policy: p, IdleTimeout: idle, Timeout: life, Metadata: labels})
		if err != nil {
			return err
		}
		fmt.Fprintln(sc.stdout, info.ID)
		return nil
	}
}

func (sc *sandboxCLI) execFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	var tty, interactive, detach bool
	var dir, timeout string
	env := kvFlag{}
	fs.BoolVar(&tty, "t", false, "run it on a terminal relayed to this one (raw mode, resized on SIGWINCH)")
	fs.BoolVar(&tty, "tty", false, "as -t")
	fs.BoolVar(&interactive, "i", false, "pass this process's stdin to it")
	fs.BoolVar(&interactive, "interactive", false, "as -i")
	fs.BoolVar(&detach, "d", false, "start it in the background, print its pid, and leave it running")
	fs.BoolVar(&detach, "detach", false, "as -d")
	fs.Var(env, "e", "`K=V` in its environment (repeatable)")
	fs.Var(env, "env", "as -e")
	fs.StringVar(&dir, "w", "", "its working directory inside (default /workspace)")
	fs.StringVar(&dir, "workdir", "", "as -w")
	fs.StringVar(&timeout, "timeout", "", "kill it after this long (`DUR`)")
	return func(fs *flag.FlagSet) error {
		a, err := args(fs, 2, -1, "exec [-t] [-i] [-d] [-e K=V] [-w DIR] ID -- PROGRAM [ARGS...]")
		if err != nil {
			return err
		}
		argv := a[1:]
		if argv[0] == "--" {
			argv = argv[1:]
		}
		if len(argv) == 0 {
			return policy.Invalid("exec", "no program: airlock sandbox exec ID -- PROGRAM [ARGS...]")
		}
		sb := sc.c.Sandbox(a[0])
		spec := client.ProcessSpec{Argv: argv, Env: env, Cwd: dir}
		if len(env) == 0 {
			spec.Env = nil
		}
		if timeout != "" {
			d, err := time.ParseDuration(timeout)
			if err != nil || d <= 0 {
				return policy.Invalid("--timeout", "%q: want a positive duration such as 30s", timeout)
			}
			spec.Timeout = d
		}
		switch {
		case detach:
			spec.StdinOpen = interactive
			if tty {
				spec.PTY, spec.StdinOpen = &client.TTYSize{Rows: 24, Cols: 80}, true
			}
			info, err := sb.StartProcess(sc.ctx, spec)
			if err != nil {
				return err
			}
			fmt.Fprintln(sc.stdout, info.PID)
			return nil
		case tty:
			return sc.execTTY(sb, spec, interactive)
		}
		if interactive {
			data, err := io.ReadAll(sc.stdin)
			if err != nil {
				return policy.Invalid("-i", "reading stdin: %v", err)
			}
			spec.Stdin = data
		}
		res, err := sb.Exec(sc.ctx, spec, sc.stdout, sc.stderr)
		if err != nil {
			return err
		}
		if res.Error != nil {
			fmt.Fprintf(sc.stderr, "airlock: %s (%s)\n", res.Error.String(), retryHint(res.Error))
		} else if res.Status != "ok" && res.Status != "exited" && res.Status != "signaled" {
			fmt.Fprintf(sc.stderr, "airlock: %s (exit %d)\n", res.Status, res.ExitCode)
		}
		return exitError(res.ExitCode)
	}
}

// execTTY runs spec on a pty relayed to the caller's terminal (raw mode
// while it runs, its size followed on SIGWINCH), as docker exec -t.
func (sc *sandboxCLI) execTTY(sb *client.Sandbox, spec client.ProcessSpec, interactive bool) error {
	in, _ := sc.stdin.(*os.File)
	rows, cols := uint16(24), uint16(80)
	isTerm := false
	if in != nil {
		if ws, err := unix.IoctlGetWinsize(int(in.Fd()), unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
			rows, cols, isTerm = ws.Row, ws.Col, true
		}
	}
	spec.PTY, spec.StdinOpen = &client.TTYSize{Rows: rows, Cols: cols}, true
	info, err := sb.StartProcess(sc.ctx, spec)
	if err != nil {
		return err
	}
	pt, err := sb.PTY(sc.ctx, info.PID)
	if err != nil {
		sb.Signal(context.Background(), info.PID, syscall.SIGKILL)
		return err
	}
	defer pt.Close()
	if isTerm {
		restore := rawTerminal(int(in.Fd()), func(r, c uint16) { pt.Resize(r, c) })
		defer restore()
	}
	if interactive || isTerm {
		go func() {
			io.Copy(pt, sc.stdin)
			if !isTerm {
				pt.Write([]byte{4}) // ^D: end of input on the terminal
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		io.Copy(sc.stdout, pt)
		close(done)
	}()
	select {
	case <-done:
	case <-sc.ctx.Done():
		// SIGINT/SIGTERM to this client (the terminal is raw: ^C goes to
		// the program, not here): the process is killed, as a
		// foreground one whose client left.
		sb.Signal(context.Background(), info.PID, syscall.SIGKILL)
		<-done
	}
	res, rerr := pt.Result()
	if rerr != nil {
		return rerr
	}
	if res == nil {
		return fmt.Errorf("the connection to airlock serve ended before process %d did (it runs on: airlock sandbox logs %s %d): %w", info.PID, sb.ID, info.PID, policy.ErrUnavailable)
	}
	return exitError(res.ExitCode)
}

// rawTerminal puts fd in raw mode and calls resize with its size on
// every SIGWINCH; it returns what undoes that.
func rawTerminal(fd int, resize func(rows, cols uint16)) func() {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag = raw.Cflag&^(unix.CSIZE|unix.PARENB) | unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	unix.IoctlSetTermios(fd, unix.TCSETS, &raw)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, unix.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
					resize(ws.Row, ws.Col)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
		unix.IoctlSetTermios(fd, unix.TCSETS, old)
	}
}

func (sc *sandboxCLI) psFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the JSON list")
	return func(fs *flag.FlagSet) error {
		a, err := args(fs, 1, 1, "ps ID")
		if err != nil {
			return err
		}
		ps, err := sc.c.Sandbox(a[0]).Processes(sc.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(sc.stdout, ps)
		}
		tw := tabwriter.NewWriter(sc.stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "PID\tSTATE\tEXIT\tSTARTED\tCOMMAND")
		for _, p := range ps {
			exit := ""
			if p.ExitCode != nil {
				exit = strconv.Itoa(*p.ExitCode)
			}
			cmd := p.Command
			if cmd == "" {
				cmd = strings.Join(p.Argv, " ")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", p.PID, p.State, exit, p.StartedAt.Local().Format(time.TimeOnly), cmd)
		}
		return tw.Flush()
	}
}

func (sc *sandboxCLI) lsFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the JSON list")
	return func(fs *flag.FlagSet) error {
		if _, err := args(fs, 0, 0, "ls"); err != nil {
			return err
		}
		list, err := sc.c.Sandboxes(sc.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(sc.stdout, list)
		}
		tw := tabwriter.NewWriter(sc.stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tPROCESSES\tCREATED\tEXPIRES\tNAME")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.ID, s.State, s.Processes, s.CreatedAt.Local().Format(time.DateTime), s.ExpiresAt.Local().Format(time.DateTime), s.Metadata["name"])
		}
		return tw.Flush()
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (sc *sandboxCLI) logsFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	var follow bool
	fs.BoolVar(&follow, "f", false, "follow the output until the process ends")
	fs.BoolVar(&follow, "follow", false, "as -f")
	return func(fs *flag.FlagSet) error {
		a, err := args(fs, 2, 2, "logs [-f] ID PID")
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(a[1])
		if err != nil {
			return policy.Invalid("pid", "%q is not a process id", a[1])
		}
		sb := sc.c.Sandbox(a[0])
		if follow {
			_, err := sb.Follow(sc.ctx, pid, 0, 0, sc.stdout, sc.stderr)
			return err
		}
		for _, st := range []struct {
			name string
			w    io.Writer
		}{{"stdout", sc.stdout}, {"stderr", sc.stderr}} {
			ch, err := sb.Output(sc.ctx, pid, st.name, 0)
			if err != nil {
				return err
			}
			if ch.Dropped > 0 {
				fmt.Fprintf(sc.stderr, "airlock: the first %d bytes of %s are no longer kept (max_output)\n", ch.Dropped, st.name)
			}
			st.w.Write(ch.Data)
		}
		return nil
	}
}

func (sc *sandboxCLI) killFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	sig := "TERM"
	fs.StringVar(&sig, "s", sig, "the `SIGNAL` (name or number)")
	fs.StringVar(&sig, "signal", sig, "as -s")
	return func(fs *flag.FlagSet) error {
		a, err := args(fs, 1, 2, "kill [-s SIGNAL] ID [PID]")
		if err != nil {
			return err
		}
		if len(a) == 1 {
			return sc.c.DeleteSandbox(sc.ctx, a[0])
		}
		pid, err := strconv.Atoi(a[1])
		if err != nil {
			return policy.Invalid("pid", "%q is not a process id", a[1])
		}
		n, err := strconv.Atoi(sig)
		if err != nil {
			up := strings.ToUpper(sig)
			if !strings.HasPrefix(up, "SIG") {
				up = "SIG" + up
			}
			if n = int(unix.SignalNum(up)); n == 0 {
				return policy.Invalid("-s", "%q is not a signal", sig)
			}
		}
		return sc.c.Sandbox(a[0]).Signal(sc.ctx, pid, syscall.Signal(n))
	}
}

func (sc *sandboxCLI) rmFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	return func(fs *flag.FlagSet) error {
		a, err := args(fs, 1, -1, "rm ID...")
		if err != nil {
			return err
		}
		for _, id := range a {
			if err := sc.c.DeleteSandbox(sc.ctx, id); err != nil {
				return err
			}
		}
		return nil
	}
}

func (sc *sandboxCLI) cpFlags(fs *flag.FlagSet) func(*flag.FlagSet) error {
	return func(fs *flag.FlagSet) error {
		a, err := args(fs, 2, 2, "cp SRC DST (ID:PATH names a file in a sandbox's /workspace; - is stdin or stdout)")
		if err != nil {
			return err
		}
		inside := func(s string) (string, string, bool) {
			id, p, ok := strings.Cut(s, ":")
			return id, p, ok && id != "" && !strings.Contains(id, "/")
		}
		sid, spath, sin := inside(a[0])
		did, dpath, din := inside(a[1])
		switch {
		case sin == din:
			return policy.Invalid("cp", "one of SRC and DST is ID:PATH, the other a local file")
		case din:
			var r io.Reader = sc.stdin
			if a[0] != "-" {
				f, err := os.Open(a[0])
				if err != nil {
					return policy.Invalid("cp", "%v", err)
				}
				defer f.Close()
				r = f
			}
			_, err := sc.c.Sandbox(did).WriteFile(sc.ctx, dpath, r)
			return err
		}
		rc, err := sc.c.Sandbox(sid).ReadFile(sc.ctx, spath)
		if err != nil {
			return err
		}
		defer rc.Close()
		var w io.Writer = sc.stdout
		if a[1] != "-" {
			f, err := os.Create(a[1])
			if err != nil {
				return policy.Invalid("cp", "%v", err)
			}
			defer f.Close()
			w = f
		}
		_, err = io.Copy(w, rc)
		return err
	}
}
