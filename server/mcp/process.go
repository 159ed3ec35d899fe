package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of a session's processes (process_start, process_output,
// process_input, process_signal, process_list) and of its ports
// (http_request). A session is a live sandbox (server.SessionSandbox):
// what runs in it lives until the session closes, whatever call started
// it.

// ProcessStartIn is process_start's input.
type ProcessStartIn struct {
	Session  string            `json:"session" jsonschema:"the id session_open returned"`
	Command  string            `json:"command,omitempty" jsonschema:"a shell command line, run by bash (give this, or argv, or language and code)"`
	Argv     []string          `json:"argv,omitempty" jsonschema:"a program and its arguments, run without a shell"`
	Language string            `json:"language,omitempty"` // described in addTools
	Code     string            `json:"code,omitempty" jsonschema:"the program's source (with language); kept outside /workspace"`
	Args     []string          `json:"args,omitempty" jsonschema:"command-line arguments of code"`
	Env      map[string]string `json:"env,omitempty" jsonschema:"environment variables of this process, over the session's"`
	Cwd      string            `json:"cwd,omitempty" jsonschema:"working directory inside the sandbox; default /workspace"`
	Stdin    bool              `json:"stdin,omitempty" jsonschema:"keep its standard input open for process_input (default: empty stdin)"`
	Timeout  float64           `json:"timeout,omitempty" jsonschema:"seconds after which it is killed; default none: it runs until it ends, is signalled, or the session closes"`
}

// ProcessOut is the output of process_start, process_input and
// process_signal.
type ProcessOut struct {
	Session  string            `json:"session"`
	PID      int               `json:"pid" jsonschema:"the process id inside the session's sandbox: give it to process_output, process_input, process_signal"`
	State    string            `json:"state,omitempty" jsonschema:"running or exited"`
	ExitCode *int              `json:"exit_code,omitempty" jsonschema:"once exited: its exit code, 128+N when killed by signal N"`
	Status   string            `json:"status,omitempty" jsonschema:"once exited: ok, exited, signaled, timeout, memory_limit, ..."`
	Error    *policy.ErrorInfo `json:"error,omitempty"`
}

// ProcessOutputIn is process_output's input.
type ProcessOutputIn struct {
	Session      string  `json:"session" jsonschema:"the id session_open returned"`
	PID          int     `json:"pid" jsonschema:"the pid process_start returned (or process_list shows)"`
	StdoutOffset *int64  `json:"stdout_offset,omitempty" jsonschema:"read stdout from this byte offset (0: from the start) instead of from where the last process_output call stopped"`
	StderrOffset *int64  `json:"stderr_offset,omitempty" jsonschema:"read stderr from this byte offset instead of from where the last call stopped"`
	Wait         float64 `json:"wait,omitempty" jsonschema:"seconds to wait for new output or the process's end when there is none yet (at most 60); default 0: return at once"`
}

// ProcessOutputOut is process_output's output.
type ProcessOutputOut struct {
	Session      string            `json:"session"`
	PID          int               `json:"pid"`
	Stdout       string            `json:"stdout" jsonschema:"stdout written since the last read (or from stdout_offset)"`
	Stderr       string            `json:"stderr"`
	StdoutOffset int64             `json:"stdout_offset" jsonschema:"the offset after this stdout: where the next call reads from"`
	StderrOffset int64             `json:"stderr_offset"`
	Dropped      int64             `json:"dropped,omitempty" jsonschema:"bytes skipped: older than what the process's output buffer keeps"`
	More         bool              `json:"more,omitempty" jsonschema:"more output is ready than this result holds: call again"`
	Running      bool              `json:"running" jsonschema:"the process is still running"`
	Ended        bool              `json:"ended" jsonschema:"it ended and all its output has been read"`
	ExitCode     *int              `json:"exit_code,omitempty" jsonschema:"once exited: its exit code, 128+N when killed by signal N"`
	Status       string            `json:"status,omitempty" jsonschema:"once exited: ok, exited, signaled, timeout, memory_limit, ..."`
	Error        *policy.ErrorInfo `json:"error,omitempty"`
}

// ProcessInputIn is process_input's input.
type ProcessInputIn struct {
	Session  string `json:"session" jsonschema:"the id session_open returned"`
	PID      int    `json:"pid" jsonschema:"a process started with stdin: true"`
	Data     string `json:"data,omitempty" jsonschema:"bytes to write to its standard input (text, or as encoding says); add the newline a line-reading program waits for"`
	Encoding string `json:"encoding,omitempty" jsonschema:"encoding of data: utf8 (default), base64 or hex"`
	Close    bool   `json:"close,omitempty" jsonschema:"close its standard input after writing (end of input)"`
}

// ProcessSignalIn is process_signal's input.
type ProcessSignalIn struct {
	Session string `json:"session" jsonschema:"the id session_open returned"`
	PID     int    `json:"pid" jsonschema:"the process (its process group gets the signal)"`
	Signal  string `json:"signal,omitempty" jsonschema:"TERM (default), KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT"`
}

// ProcessEntry is one process of process_list.
type ProcessEntry struct {
	PID       int      `json:"pid"`
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd,omitempty"`
	State     string   `json:"state" jsonschema:"running or exited"`
	StartedAt string   `json:"started_at" jsonschema:"RFC 3339"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	Status    string   `json:"status,omitempty"`
}

// ProcessListOut is process_list's output.
type ProcessListOut struct {
	Session   string            `json:"session"`
	Processes []ProcessEntry    `json:"processes" jsonschema:"running processes started by process_start or session_run, and recently ended ones"`
	Listening []int             `json:"listening" jsonschema:"TCP ports something listens on inside the sandbox: what http_request can reach"`
	Error     *policy.ErrorInfo `json:"error,omitempty"`
}

// HTTPRequestIn is http_request's input.
type HTTPRequestIn struct {
	Session      string            `json:"session" jsonschema:"the id session_open returned"`
	Port         int               `json:"port" jsonschema:"the TCP port inside the sandbox (process_list's listening)"`
	Method       string            `json:"method,omitempty" jsonschema:"GET (default), POST, PUT, DELETE, PATCH, HEAD or OPTIONS"`
	Path         string            `json:"path,omitempty" jsonschema:"the path and query, starting with /; default /"`
	Headers      map[string]string `json:"headers,omitempty" jsonschema:"request headers"`
	Body         string            `json:"body,omitempty" jsonschema:"the request body (text, or as body_encoding says)"`
	BodyEncoding string            `json:"body_encoding,omitempty" jsonschema:"encoding of body: utf8 (default), base64 or hex"`
	Timeout      float64           `json:"timeout,omitempty" jsonschema:"seconds to wait for the whole response; default 30, at most 300"`
}

// HTTPResponseOut is http_request's output.
type HTTPResponseOut struct {
	Session      string            `json:"session"`
	Port         int               `json:"port"`
	Status       int               `json:"status,omitempty" jsonschema:"the HTTP status code"`
	Headers      map[string]string `json:"headers,omitempty" jsonschema:"the response headers (several values joined by comma)"`
	Body         string            `json:"body,omitempty"`
	BodyEncoding string            `json:"body_encoding,omitempty" jsonschema:"base64 when the body is not UTF-8 text"`
	Truncated    bool              `json:"truncated,omitempty" jsonschema:"body holds only the start of the response's body (this connection's cap per result)"`
	Error        *policy.ErrorInfo `json:"error,omitempty"`
}

// sandbox returns c's session's sandbox.
func (m *MCP) sandbox(ss *sdk.ServerSession, session string) (*conn, *executor.Sandbox, error) {
	c, err := m.conn(ss)
	if err != nil {
		return nil, nil, err
	}
	if err := c.owns(session); err != nil {
		return nil, nil, err
	}
	sb, err := m.srv.SessionSandbox(session)
	return c, sb, err
}

// process returns the process pid of c's session.
func (m *MCP) process(ss *sdk.ServerSession, session string, pid int) (*conn, *executor.Process, error) {
	c, sb, err := m.sandbox(ss, session)
	if err != nil {
		return nil, nil, err
	}
	p := sb.Process(pid)
	if p == nil {
		return nil, nil, policy.Invalid("pid", "no process %d in session %s (ended long ago, or never started: process_list lists them)", pid, session)
	}
	return c, p, nil
}

// procOut is a process's state as ProcessOut.
func procOut(session string, p *executor.Process) ProcessOut {
	info := p.Info()
	return ProcessOut{Session: session, PID: info.PID, State: info.State, ExitCode: info.ExitCode, Status: info.Status}
}

func (m *MCP) processStart(ctx context.Context, req *sdk.CallToolRequest, in ProcessStartIn) (*sdk.CallToolResult, ProcessOut, error) {
	out := ProcessOut{Session: in.Session}
	fail := func(err error) (*sdk.CallToolResult, ProcessOut, error) {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	_, sb, err := m.sandbox(req.Session, in.Session)
	if err != nil {
		return fail(err)
	}
	t, err := seconds("timeout", in.Timeout)
	if err != nil {
		return fail(err)
	}
	pr := executor.ProcessRequest{Env: in.Env, Dir: in.Cwd, Stdin: in.Stdin}
	if t != nil {
		pr.Timeout = time.Duration(*t)
	}
	given := 0
	for _, g := range []bool{in.Command != "", len(in.Argv) > 0, in.Language != "" || in.Code != ""} {
		if g {
			given++
		}
	}
	switch {
	case given != 1:
		return fail(policy.Invalid("command", "give exactly one of command, argv, or language and code"))
	case len(in.Args) > 0 && in.Language == "":
		return fail(policy.Invalid("args", "args go with language and code; put a command's arguments in its command line, a program's in argv"))
	case in.Command != "":
		pr.Argv = m.shell(in.Command)
	case len(in.Argv) > 0:
		pr.Argv = in.Argv
	case in.Language == "":
		return fail(policy.Invalid("language", "required with code"))
	default:
		if !m.knowsLanguage(in.Language) {
			return fail(policy.Invalid("language", "%q is not one of %s", in.Language, languagesText(m.srv.Languages())))
		}
		pr.Language, pr.Code, pr.Argv = in.Language, in.Code, in.Args
	}
	for i, a := range pr.Argv {
		if strings.ContainsRune(a, 0) {
			return fail(policy.Invalid("argv", "argv[%d] holds a NUL byte", i))
		}
	}
	// The process outlives this call: not the call's context.
	p, err := sb.Exec(context.WithoutCancel(ctx), pr)
	if err != nil {
		return fail(asField(err, "cwd", "dir"))
	}
	out = procOut(in.Session, p)
	return text(fmt.Sprintf("started pid %d in session %s; it runs in the background until it ends or the session closes. "+
		"Read its output with process_output (pid %d); a server's port shows in process_list once it listens.", out.PID, in.Session, out.PID)), out, nil
}

// shell is the argv of a command line: bash's, or sh's where there is
// no bash (as session_run's command).
func (m *MCP) shell(command string) []string {
	if slices.Contains(m.srv.LanguageNames(), "bash") {
		return []string{"bash", "-c", command}
	}
	return []string{"sh", "-c", command}
}

// errGotOutput stops a wait for output once some came.
var errGotOutput = errors.New("output")

const maxWait = 60 * time.Second

func (m *MCP) processOutput(ctx context.Context, req *sdk.CallToolRequest, in ProcessOutputIn) (*sdk.CallToolResult, ProcessOutputOut, error) {
	out := ProcessOutputOut{Session: in.Session, PID: in.PID}
	fail := func(err error) (*sdk.CallToolResult, ProcessOutputOut, error) {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	c, p, err := m.process(req.Session, in.Session, in.PID)
	if err != nil {
		return fail(err)
	}
	if in.Wait < 0 || in.Wait > maxWait.Seconds() {
		return fail(policy.Invalid("wait", "must be 0 to %v seconds", maxWait.Seconds()))
	}
	offs := c.offsets(in.Session, p)
	for i, o := range []*int64{in.StdoutOffset, in.StderrOffset} {
		if o != nil {
			if *o < 0 {
				return fail(policy.Invalid([]string{"stdout_offset", "stderr_offset"}[i], "must be 0 or more"))
			}
			offs[i] = *o
		}
	}
	if in.Wait > 0 {
		// Follow returns at the first chunk past the offsets (fn's
		// error), when both streams end, or at the deadline.
		wctx, cancel := context.WithTimeout(ctx, time.Duration(in.Wait*float64(time.Second)))
		p.Follow(wctx, offs[0], offs[1], func(string, []byte) error { return errGotOutput })
		cancel()
	}
	data0, next0, drop0, eof0 := p.Output("stdout", offs[0])
	data1, next1, drop1, eof1 := p.Output("stderr", offs[1])
	// Each stream gets half the cap, or what the other leaves.
	half := m.cfg.MaxReturn / 2
	cap0, cap1 := max(half, m.cfg.MaxReturn-len(data1)), max(half, m.cfg.MaxReturn-len(data0))
	if len(data0) > cap0 {
		data0, eof0, out.More = trimPartialRune(data0[:cap0]), false, true
		next0 = offs[0] + drop0 + int64(len(data0))
	}
	if len(data1) > cap1 {
		data1, eof1, out.More = trimPartialRune(data1[:cap1]), false, true
		next1 = offs[1] + drop1 + int64(len(data1))
	}
	c.setOffsets(in.Session, p, [2]int64{next0, next1})
	info := p.Info()
	out.Stdout, out.Stderr = textOf(data0), textOf(data1)
	out.StdoutOffset, out.StderrOffset, out.Dropped = next0, next1, drop0+drop1
	out.Running = info.State == "running"
	out.Ended = !out.Running && eof0 && eof1
	out.ExitCode, out.Status = info.ExitCode, info.Status
	var b strings.Builder
	switch {
	case out.Running:
		fmt.Fprintf(&b, "pid %d is running", in.PID)
	case info.ExitCode != nil:
		fmt.Fprintf(&b, "pid %d exited: %s, exit code %d", in.PID, info.Status, *info.ExitCode)
	default:
		fmt.Fprintf(&b, "pid %d ended", in.PID)
	}
	if len(data0)+len(data1) == 0 {
		b.WriteString("; no new output")
	}
	if out.Dropped > 0 {
		fmt.Fprintf(&b, "; %d bytes of older output were dropped (the buffer keeps the last ones)", out.Dropped)
	}
	if out.More {
		b.WriteString("; more output is ready: call process_output again")
	}
	b.WriteString("\n")
	if out.Stdout != "" {
		fmt.Fprintf(&b, "--- stdout ---\n%s", out.Stdout)
		if !strings.HasSuffix(out.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if out.Stderr != "" {
		fmt.Fprintf(&b, "--- stderr ---\n%s", out.Stderr)
	}
	return text(b.String()), out, nil
}

func (m *MCP) processInput(ctx context.Context, req *sdk.CallToolRequest, in ProcessInputIn) (*sdk.CallToolResult, ProcessOut, error) {
	out := ProcessOut{Session: in.Session, PID: in.PID}
	fail := func(err error) (*sdk.CallToolResult, ProcessOut, error) {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	_, p, err := m.process(req.Session, in.Session, in.PID)
	if err != nil {
		return fail(err)
	}
	data, err := decode(in.Data, in.Encoding)
	if err != nil {
		return fail(asField(err, "data", "content"))
	}
	if len(data) > 0 {
		if _, err := p.Write(data); err != nil {
			return fail(inputError(in.PID, err))
		}
	}
	if in.Close {
		if err := p.CloseStdin(); err != nil {
			return fail(inputError(in.PID, err))
		}
	}
	out = procOut(in.Session, p)
	msg := fmt.Sprintf("wrote %d bytes to pid %d's stdin", len(data), in.PID)
	if in.Close {
		msg += " and closed it"
	}
	return text(msg + "; its answer is in process_output."), out, nil
}

// inputError is a refused write to a process's stdin, classified.
func inputError(pid int, err error) error {
	if errors.Is(err, policy.ErrInvalid) || errors.Is(err, policy.ErrUnsupported) || errors.Is(err, policy.ErrUnavailable) {
		return err // the library's (a closed session, ...)
	}
	return policy.Invalid("pid", "cannot write to pid %d's stdin (it was not started with stdin: true, its stdin is closed, or it ended): %v", pid, err)
}

var signals = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT}

func (m *MCP) processSignal(ctx context.Context, req *sdk.CallToolRequest, in ProcessSignalIn) (*sdk.CallToolResult, ProcessOut, error) {
	out := ProcessOut{Session: in.Session, PID: in.PID}
	fail := func(err error) (*sdk.CallToolResult, ProcessOut, error) {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	name := strings.TrimPrefix(strings.ToUpper(in.Signal), "SIG")
	if name == "" {
		name = "TERM"
	}
	sig, ok := signals[name]
	if !ok {
		return fail(policy.Invalid("signal", "%q is not one of TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT", in.Signal))
	}
	_, p, err := m.process(req.Session, in.Session, in.PID)
	if err != nil {
		return fail(err)
	}
	if err := p.Signal(sig); err != nil {
		return fail(err)
	}
	if sig == syscall.SIGKILL {
		select {
		case <-p.Done():
		case <-time.After(time.Second):
		}
	}
	out = procOut(in.Session, p)
	return text(fmt.Sprintf("sent SIG%s to pid %d (its process group); it is %s now", name, in.PID, out.State)), out, nil
}

func (m *MCP) processList(ctx context.Context, req *sdk.CallToolRequest, in SessionIn) (*sdk.CallToolResult, ProcessListOut, error) {
	out := ProcessListOut{Session: in.Session, Processes: []ProcessEntry{}, Listening: []int{}}
	_, sb, err := m.sandbox(req.Session, in.Session)
	if err != nil {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	for _, p := range sb.Processes() {
		out.Processes = append(out.Processes, ProcessEntry{PID: p.PID, Argv: p.Argv, Cwd: p.Cwd, State: p.State,
			StartedAt: p.StartedAt.UTC().Format(time.RFC3339), ExitCode: p.ExitCode, Status: p.Status})
	}
	var b strings.Builder
	ports, perr := listening(ctx, sb)
	if perr == nil {
		out.Listening = ports
	}
	fmt.Fprintf(&b, "%d processes in session %s\n", len(out.Processes), in.Session)
	for _, p := range out.Processes {
		state := p.State
		if p.ExitCode != nil {
			state = fmt.Sprintf("%s (%s, exit code %d)", p.State, p.Status, *p.ExitCode)
		}
		fmt.Fprintf(&b, "pid %d\t%s\t%s\n", p.PID, state, strings.Join(p.Argv, " "))
	}
	switch {
	case perr != nil:
		fmt.Fprintf(&b, "listening ports unknown: %s\n", policy.Describe(perr).Message)
	case len(ports) == 0:
		b.WriteString("no TCP port is listening\n")
	default:
		fmt.Fprintf(&b, "listening TCP ports (http_request reaches them): %s\n", strings.Trim(fmt.Sprint(ports), "[]"))
	}
	return text(b.String()), out, nil
}

// listening is the TCP ports listened on in sb's network namespace, as
// its /proc/net/tcp and tcp6 say (read by a process inside: the host's
// /proc shows the host's).
func listening(ctx context.Context, sb *executor.Sandbox) ([]int, error) {
	res, err := sb.Run(ctx, executor.ProcessRequest{Argv: []string{"cat", "/proc/net/tcp", "/proc/net/tcp6"}, Timeout: 5 * time.Second}, nil)
	if err != nil {
		return nil, err
	}
	return parseListening(res.Stdout), nil
}

// parseListening reads the ports in state LISTEN (0A) of /proc/net/tcp
// lines ("sl local_address rem_address st ...", address HEX:PORT).
func parseListening(s string) []int {
	var ports []int
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(hexPort, 16, 16); err == nil && !slices.Contains(ports, int(n)) {
			ports = append(ports, int(n))
		}
	}
	slices.Sort(ports)
	return ports
}

var methods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}

func (m *MCP) httpRequest(ctx context.Context, req *sdk.CallToolRequest, in HTTPRequestIn) (*sdk.CallToolResult, HTTPResponseOut, error) {
	out := HTTPResponseOut{Session: in.Session, Port: in.Port}
	fail := func(err error) (*sdk.CallToolResult, HTTPResponseOut, error) {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	_, sb, err := m.sandbox(req.Session, in.Session)
	if err != nil {
		return fail(err)
	}
	if in.Port < 1 || in.Port > 65535 {
		return fail(policy.Invalid("port", "%d is not a TCP port (1 to 65535)", in.Port))
	}
	method := strings.ToUpper(in.Method)
	if method == "" {
		method = "GET"
	}
	if !slices.Contains(methods, method) {
		return fail(policy.Invalid("method", "%q is not one of %s", in.Method, strings.Join(methods, ", ")))
	}
	path := in.Path
	if path == "" {
		path = "/"
	}
	if u, err := url.ParseRequestURI(path); err != nil || !strings.HasPrefix(path, "/") || u.Host != "" || u.Scheme != "" {
		return fail(policy.Invalid("path", "%q must be a path (and query) starting with /", in.Path))
	}
	timeout := 30 * time.Second
	if t, err := seconds("timeout", in.Timeout); err != nil {
		return fail(err)
	} else if t != nil {
		if time.Duration(*t) > 300*time.Second {
			return fail(policy.Invalid("timeout", "at most 300 seconds"))
		}
		timeout = time.Duration(*t)
	}
	body, err := decode(in.Body, in.BodyEncoding)
	if err != nil {
		return fail(asField(asField(err, "body", "content"), "body_encoding", "encoding"))
	}
	host := "localhost:" + strconv.Itoa(in.Port)
	hreq, err := http.NewRequestWithContext(ctx, method, "http://"+host+path, bytes.NewReader(body))
	if err != nil {
		return fail(policy.Invalid("path", "%v", err))
	}
	for k, v := range in.Headers {
		if strings.EqualFold(k, "Host") {
			hreq.Host = v
			continue
		}
		hreq.Header.Set(k, v)
	}
	// Every connection is a Dial into the sandbox's own loopback,
	// whatever the address: nothing of the host or the network is ever
	// dialled, and a redirect is returned, not followed.
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return sb.Dial(ctx, in.Port) },
		DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(hreq)
	if err != nil {
		return fail(dialError(in.Port, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(m.cfg.MaxReturn)+1))
	if err != nil && len(data) == 0 {
		return fail(dialError(in.Port, err))
	}
	if len(data) > m.cfg.MaxReturn {
		data, out.Truncated = data[:m.cfg.MaxReturn], true
	}
	out.Status = resp.StatusCode
	out.Headers = map[string]string{}
	for k, v := range resp.Header {
		out.Headers[k] = strings.Join(v, ", ")
	}
	if utf8.Valid(data) || out.Truncated && utf8.Valid(trimPartialRune(data)) {
		out.Body = string(trimPartialRune(data))
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s from port %d\n", resp.Status, in.Port)
	for _, k := range slices.Sorted(maps.Keys(out.Headers)) {
		fmt.Fprintf(&b, "%s: %s\n", k, out.Headers[k])
	}
	b.WriteString("\n")
	switch {
	case out.BodyEncoding != "":
		fmt.Fprintf(&b, "(binary body, %d bytes: base64 in the structured content)\n", len(data))
	default:
		b.WriteString(out.Body)
	}
	if out.Truncated {
		fmt.Fprintf(&b, "\n[body cut at %d bytes: this connection's cap per result]\n", m.cfg.MaxReturn)
	}
	return text(b.String()), out, nil
}

// dialError is a failed request into a sandbox, classified: a closed
// session stays what it is; nothing listening, a reset or no answer in
// time may pass (a server still starting): retryable.
func dialError(port int, err error) error {
	if errors.Is(err, policy.ErrInvalid) || errors.Is(err, policy.ErrUnsupported) {
		return err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("mcp: nothing listens on port %d in the session's sandbox (connection refused): start the server (process_start), check process_output and process_list's listening, then retry: %w", port, policy.ErrUnavailable)
	}
	return fmt.Errorf("mcp: the request to port %d in the session's sandbox failed: %v: %w", port, err, policy.ErrUnavailable)
}

// knowsLanguage reports whether name is an installed language or alias.
func (m *MCP) knowsLanguage(name string) bool {
	for _, l := range m.srv.Languages() {
		if l.Name == name || slices.Contains(l.Aliases, name) {
			return true
		}
	}
	return false
}
