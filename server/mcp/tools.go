package mcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FileIn is a file written into /workspace before a run.
type FileIn struct {
	Name     string `json:"name" jsonschema:"path relative to /workspace (no .., not absolute)"`
	Content  string `json:"content" jsonschema:"the file's content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"encoding of content: utf8 (default), base64 or hex"`
}

// RunCodeIn is run_code's input.
type RunCodeIn struct {
	Language string   `json:"language"` // described in addTools
	Code     string   `json:"code" jsonschema:"the program's source"`
	Stdin    string   `json:"stdin,omitempty" jsonschema:"the program's standard input (text)"`
	Args     []string `json:"args,omitempty" jsonschema:"the program's command-line arguments"`
	Timeout  float64  `json:"timeout,omitempty"` // described in addTools
	Files    []FileIn `json:"files,omitempty" jsonschema:"files written into /workspace (the program's working directory) first"`
}

// RunOut is the output of run_code and session_run.
type RunOut struct {
	// Status is the library's status (ok, exited, signaled, timeout,
	// memory_limit, output_limit, ...), or "error" when refused.
	Status          string             `json:"status" jsonschema:"ok, exited, signaled, timeout, cpu_limit, memory_limit, seccomp_violation, output_limit, cancelled, setup_error, or error (refused: nothing ran)"`
	ExitCode        int                `json:"exit_code" jsonschema:"the program's exit code; 128+N when killed by signal N"`
	Signal          string             `json:"signal,omitempty"`
	Stdout          string             `json:"stdout"`
	Stderr          string             `json:"stderr"`
	StdoutTruncated bool               `json:"stdout_truncated,omitempty" jsonschema:"stdout is incomplete here (the sandbox's output limit, or this result's size cap)"`
	StderrTruncated bool               `json:"stderr_truncated,omitempty"`
	OutputNote      string             `json:"output_note,omitempty" jsonschema:"what was cut, and where the full output is"`
	WallTimeMS      int64              `json:"wall_time_ms"`
	CPUTimeMS       int64              `json:"cpu_time_ms"`
	MemoryPeakBytes int64              `json:"memory_peak_bytes"`
	Files           []server.FileEntry `json:"files,omitempty" jsonschema:"files in /workspace after the run"`
	Session         string             `json:"session,omitempty"`
	Error           *policy.ErrorInfo  `json:"error,omitempty" jsonschema:"why the call was refused or the sandbox failed: class, retryable, field, message, fix"`
}

// SessionOpenIn is session_open's input.
type SessionOpenIn struct {
	Timeout     float64           `json:"timeout,omitempty"`      // described in addTools
	IdleTimeout float64           `json:"idle_timeout,omitempty"` // described in addTools
	Env         map[string]string `json:"env,omitempty" jsonschema:"environment variables of every run in the session"`
}

// SessionOut is the output of session_open and session_close.
type SessionOut struct {
	Session     string            `json:"session"`
	Closed      bool              `json:"closed,omitempty"`
	IdleTimeout string            `json:"idle_timeout,omitempty"`
	Timeout     string            `json:"timeout,omitempty"`
	Error       *policy.ErrorInfo `json:"error,omitempty"`
}

// SessionRunIn is session_run's input: a shell command, or code.
type SessionRunIn struct {
	Session  string   `json:"session" jsonschema:"the id session_open returned"`
	Command  string   `json:"command,omitempty" jsonschema:"a shell command line, run by bash in /workspace (give this, or language and code)"`
	Language string   `json:"language,omitempty"` // described in addTools
	Code     string   `json:"code,omitempty" jsonschema:"the program's source (with language)"`
	Stdin    string   `json:"stdin,omitempty" jsonschema:"the program's standard input (text)"`
	Args     []string `json:"args,omitempty" jsonschema:"command-line arguments of code (a command has its own in its command line)"`
	Timeout  float64  `json:"timeout,omitempty"` // described in addTools
}

// SessionIn is session_close's and list_files' input.
type SessionIn struct {
	Session string `json:"session" jsonschema:"the id session_open returned"`
}

// ReadFileIn is read_file's input.
type ReadFileIn struct {
	Session string `json:"session" jsonschema:"the id session_open returned"`
	Path    string `json:"path" jsonschema:"path relative to /workspace"`
}

// FileOut is the output of read_file and write_file.
type FileOut struct {
	Session   string            `json:"session"`
	Path      string            `json:"path"`
	Size      int64             `json:"size" jsonschema:"the file's size in bytes"`
	Content   string            `json:"content,omitempty"`
	Encoding  string            `json:"encoding,omitempty" jsonschema:"base64 when the content is not UTF-8 text"`
	Truncated bool              `json:"truncated,omitempty" jsonschema:"content holds only the start of the file"`
	Error     *policy.ErrorInfo `json:"error,omitempty"`
}

// WriteFileIn is write_file's input.
type WriteFileIn struct {
	Session  string `json:"session" jsonschema:"the id session_open returned"`
	Path     string `json:"path" jsonschema:"path relative to /workspace; parent directories are made"`
	Content  string `json:"content" jsonschema:"the file's whole content (text, or as encoding says)"`
	Encoding string `json:"encoding,omitempty" jsonschema:"encoding of content: utf8 (default), base64 or hex"`
}

// ListOut is list_files' output.
type ListOut struct {
	Session string             `json:"session"`
	Files   []server.FileEntry `json:"files"`
	Error   *policy.ErrorInfo  `json:"error,omitempty"`
}

// CapsOut is capabilities' output.
type CapsOut struct {
	server.Capabilities
	Connection ConnLimits `json:"connection"`
}

// ConnLimits are the limits of one client connection.
type ConnLimits struct {
	MaxRuns     int `json:"max_runs" jsonschema:"runs going at once"`
	MaxSessions int `json:"max_sessions" jsonschema:"sessions open at once"`
	MaxReturn   int `json:"max_return" jsonschema:"bytes of output or file content in one result; past it output is cut (and saved in the session)"`
}

const maxListed = 1000

func (m *MCP) addTools() error {
	p := m.srv.Policy()
	served := time.Duration(p.Timeout)
	langs := m.srv.Languages()
	var names []string
	for _, l := range langs {
		names = append(names, l.Name)
	}
	runSchema, err := jsonschema.For[RunCodeIn](nil)
	if err != nil {
		return fmt.Errorf("mcp: BUG: run_code schema: %w", err)
	}
	sessRunSchema, err := jsonschema.For[SessionRunIn](nil)
	if err != nil {
		return fmt.Errorf("mcp: BUG: session_run schema: %w", err)
	}
	openSchema, err := jsonschema.For[SessionOpenIn](nil)
	if err != nil {
		return fmt.Errorf("mcp: BUG: session_open schema: %w", err)
	}
	// language: every name a request may give (executor's one table, as
	// the REST routes take it: names and aliases), as an enum and said.
	langDesc := "the language of code: " + languagesText(langs)
	for _, s := range []*jsonschema.Schema{runSchema, sessRunSchema} {
		l := s.Properties["language"]
		l.Description = langDesc
		for _, lang := range langs {
			for _, n := range slices.Concat([]string{lang.Name}, lang.Aliases) {
				l.Enum = append(l.Enum, n)
			}
		}
	}
	runSchema.Properties["timeout"].Description = fmt.Sprintf("wall-clock limit of the run in seconds; default and maximum %v (the served timeout)", served)
	sessRunSchema.Properties["timeout"].Description = fmt.Sprintf("wall-clock limit of this run in seconds; default and maximum the session's timeout (session_open's, at most %v); on expiry the run is killed, status timeout", served)
	openSchema.Properties["timeout"].Description = fmt.Sprintf("each run's wall-clock limit in seconds; default and maximum %v (the served timeout)", served)
	openSchema.Properties["idle_timeout"].Description = "seconds without a call on the session after which it closes itself and deletes its files; default and maximum the server's (capabilities: server.session_idle)"
	// Annotations, true to what each tool does. A run executes arbitrary
	// code: never read-only; with a network beyond the sandbox it may
	// change the world outside (destructive, not idempotent, open world),
	// without one nothing it does outlives its sandbox but the files of
	// a session. The file tools and session_open/close touch only a
	// session's workspace; read_file, list_files and capabilities change
	// nothing.
	ann := func(title string, readOnly, destructive, idempotent, open bool) *sdk.ToolAnnotations {
		return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &open}
	}
	background := "A process left running in the background (cmd &, nohup, a server) is killed when the call returns: nothing runs between calls, so start a server and use it within one call."
	net := "no network"
	if p.Network() == policy.NetLoopback {
		net = "only the sandbox's own loopback network"
	} else if m.open {
		net = "network: " + string(p.Network())
	}
	limits := fmt.Sprintf("Limits: %v a run (timeout), %d MiB of memory, %s; at most %d KiB of stdout and stderr in the result (capabilities lists all).", served, p.MemoryLimit()>>20, net, m.cfg.MaxReturn>>10)
	addTool(m, &sdk.Tool{Name: "run_code", InputSchema: runSchema, Annotations: ann("Run code in a fresh sandbox", false, m.open, !m.open, m.open),
		Description: "Runs code in a fresh, isolated sandbox (languages: " + strings.Join(names, ", ") + ") and returns its exit status, stdout and stderr. " +
			"The sandbox ends with the call: files it writes are discarded (use a session to keep them). " + background + " " + limits}, m.runCode)
	addTool(m, &sdk.Tool{Name: "session_open", InputSchema: openSchema, Annotations: ann("Open a sandbox session", false, false, false, false),
		Description: fmt.Sprintf("Opens a session: a /workspace directory kept across session_run, read_file, write_file and list_files calls; returns its id. "+
			"Each run is a fresh sandbox over it: only the files in /workspace persist. At most %d sessions open per connection; close it with session_close when done.", m.cfg.MaxSessions)}, m.sessionOpen)
	addTool(m, &sdk.Tool{Name: "session_run", InputSchema: sessRunSchema, Annotations: ann("Run in a session", false, true, false, m.open),
		Description: "Runs a shell command (command, by bash) or code (language and code) in a fresh sandbox over the session's /workspace, its working directory. " +
			"Only files under /workspace ($HOME) persist to later calls; the shell's state (cd, variables), /tmp and processes do not, and the rest of the file system is read-only. " +
			background + fmt.Sprintf(" Output past %d KiB is cut in the result and saved whole in the workspace (output_note says where).", m.cfg.MaxReturn>>10)}, m.sessionRun)
	addTool(m, &sdk.Tool{Name: "session_close", Annotations: ann("Close a session", false, true, true, false),
		Description: "Closes a session and deletes its workspace and every file in it."}, m.sessionClose)
	addTool(m, &sdk.Tool{Name: "read_file", Annotations: ann("Read a session file", true, false, true, false),
		Description: fmt.Sprintf("Reads a file of a session's /workspace (path relative to it), without running anything. "+
			"Returns at most the first %d KiB (truncated: true past it; read further parts with session_run, e.g. tail -c); content that is not UTF-8 comes as base64.", m.cfg.MaxReturn>>10)}, m.readFile)
	addTool(m, &sdk.Tool{Name: "write_file", Annotations: ann("Write a session file", false, true, true, false),
		Description: "Creates or replaces a file of a session's /workspace (path relative to it; parent directories are made), without running anything. " +
			"content is text, or base64 or hex as encoding says; at most the server's max_request bytes (capabilities)."}, m.writeFile)
	addTool(m, &sdk.Tool{Name: "list_files", Annotations: ann("List session files", true, false, true, false),
		Description: fmt.Sprintf("Lists the files under a session's /workspace, subdirectories included, with their sizes in bytes (at most %d entries).", maxListed)}, m.listFiles)
	capsSchema, err := jsonschema.For[CapsOut](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		// Durations marshal as "1m30s", sizes as numbers of bytes.
		reflect.TypeFor[policy.Duration](): {Type: "string"},
	}})
	if err != nil {
		return fmt.Errorf("mcp: BUG: capabilities schema: %w", err)
	}
	addTool(m, &sdk.Tool{Name: "capabilities", OutputSchema: capsSchema, Annotations: ann("Sandbox capabilities", true, false, true, false),
		Description: "The installed languages with their versions, the limits of each run and of this connection, and what this host enforces (namespaces, seccomp, cgroups, Landlock)."}, m.capabilities)
	slices.Sort(m.tools)
	return nil
}

// languagesText lists languages with their aliases: "python (or
// python3, py), bash".
func languagesText(langs []executor.Language) string {
	var out []string
	for _, l := range langs {
		if len(l.Aliases) > 0 {
			out = append(out, l.Name+" (or "+strings.Join(l.Aliases, ", ")+")")
		} else {
			out = append(out, l.Name)
		}
	}
	return strings.Join(out, ", ")
}

// addTool adds a tool to the SDK server and its name to m.tools.
func addTool[In, Out any](m *MCP, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	sdk.AddTool(m.sdk, t, h)
	m.tools = append(m.tools, t.Name)
}

// seconds turns a tool's seconds into a duration override (nil for 0).
func seconds(field string, s float64) (*policy.Duration, error) {
	switch {
	case s == 0:
		return nil, nil
	case !(s > 0) || math.IsInf(s, 0) || s > 1e6:
		return nil, policy.Invalid(field, "must be a positive number of seconds")
	}
	d := policy.Duration(time.Duration(s * float64(time.Second)))
	return &d, nil
}

func (m *MCP) runCode(ctx context.Context, req *sdk.CallToolRequest, in RunCodeIn) (*sdk.CallToolResult, RunOut, error) {
	c, err := m.conn(req.Session)
	if err != nil {
		return refusedRun(err, nil)
	}
	t, err := seconds("timeout", in.Timeout)
	if err != nil {
		return refusedRun(err, nil)
	}
	b := &server.ExecRequest{Language: in.Language, Code: in.Code, Args: in.Args, Stdin: in.Stdin, Files: filesIn(in.Files)}
	if t != nil {
		b.Policy = &server.Overrides{Timeout: t}
	}
	timeout := time.Duration(m.srv.Policy().Timeout)
	if t != nil {
		timeout = time.Duration(*t)
	}
	res, err := m.run(ctx, req, c, timeout, func(ctx context.Context) (*executor.Result, error) { return m.srv.Exec(ctx, b) })
	if err != nil {
		return refusedRun(asField(err, "files", "file name"), res)
	}
	return m.runResult(c, "", res)
}

func filesIn(fs []FileIn) []server.FileIn {
	var out []server.FileIn
	for _, f := range fs {
		out = append(out, server.FileIn{Name: f.Name, Content: f.Content, Encoding: f.Encoding})
	}
	return out
}

// run runs f under one of c's run slots, with progress notifications
// when the call asked for them.
func (m *MCP) run(ctx context.Context, req *sdk.CallToolRequest, c *conn, timeout time.Duration, f func(context.Context) (*executor.Result, error)) (*executor.Result, error) {
	ctx, done, err := m.startRun(ctx, c)
	if err != nil {
		return nil, err
	}
	defer done()
	if tok := req.Params.GetProgressToken(); tok != nil {
		stop := m.progress(ctx, req.Session, tok, timeout)
		defer stop()
	}
	res, err := f(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = fmt.Errorf("mcp: cancelled by the client (the sandbox was killed): %w", err)
	}
	return res, err
}

// progress sends a progress notification every ProgressEvery until
// the returned stop is called.
func (m *MCP) progress(ctx context.Context, ss *sdk.ServerSession, tok any, timeout time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTicker(m.cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				el := time.Since(start)
				ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: el.Seconds(), Total: timeout.Seconds(),
					Message: fmt.Sprintf("running for %v (time limit %v)", el.Round(time.Second), timeout)})
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (m *MCP) sessionOpen(ctx context.Context, req *sdk.CallToolRequest, in SessionOpenIn) (*sdk.CallToolResult, SessionOut, error) {
	c, err := m.conn(req.Session)
	if err != nil {
		return refused(err, SessionOut{Error: policy.Describe(err)})
	}
	b := &server.SessionRequest{Env: in.Env}
	t, err := seconds("timeout", in.Timeout)
	if err != nil {
		return refused(err, SessionOut{Error: policy.Describe(err)})
	}
	if t != nil {
		b.Policy = &server.Overrides{Timeout: t}
	}
	if b.IdleTimeout, err = seconds("idle_timeout", in.IdleTimeout); err != nil {
		return refused(err, SessionOut{Error: policy.Describe(err)})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.sessions {
		if !m.srv.SessionOpen(id) {
			delete(c.sessions, id)
		}
	}
	if len(c.sessions) >= m.cfg.MaxSessions {
		err := fmt.Errorf("mcp: this connection has %d sessions open, the most it may; close one with session_close: %w", len(c.sessions), policy.ErrUnavailable)
		return refused(err, SessionOut{Error: policy.Describe(err)})
	}
	info, err := m.srv.OpenSession(b)
	if err != nil {
		return refused(err, SessionOut{Error: policy.Describe(err)})
	}
	c.sessions[info.ID] = time.Duration(info.Policy.Timeout)
	out := SessionOut{Session: info.ID, IdleTimeout: time.Duration(info.IdleTimeout).String(), Timeout: time.Duration(info.Policy.Timeout).String()}
	return text(fmt.Sprintf("session %s open: /workspace is kept across session_run calls; each run may take %s; it closes itself after %s unused.", out.Session, out.Timeout, out.IdleTimeout)), out, nil
}

func (m *MCP) sessionRun(ctx context.Context, req *sdk.CallToolRequest, in SessionRunIn) (*sdk.CallToolResult, RunOut, error) {
	c, err := m.conn(req.Session)
	if err != nil {
		return refusedRun(err, nil)
	}
	timeout, err := c.runTimeout(in.Session)
	if err != nil {
		return refusedRun(err, nil)
	}
	t, err := seconds("timeout", in.Timeout)
	if err != nil {
		return refusedRun(err, nil)
	}
	if t != nil && time.Duration(*t) > timeout {
		return refusedRun(policy.Invalid("timeout", "%v is above this session's timeout of a run, %v (session_open's timeout, at most the served one)", time.Duration(*t), timeout), nil)
	}
	b := &server.ExecRequest{Language: in.Language, Code: in.Code, Args: in.Args, Stdin: in.Stdin}
	switch {
	case in.Command != "" && (in.Language != "" || in.Code != ""):
		return refusedRun(policy.Invalid("command", "give either command, or language and code, not both"), nil)
	case in.Command != "":
		if len(in.Args) > 0 {
			return refusedRun(policy.Invalid("args", "args go with code; put a command's arguments in its command line"), nil)
		}
		b.Language, b.Code = "bash", in.Command
		if !slices.Contains(m.srv.LanguageNames(), "bash") {
			b.Language = "sh"
		}
	case in.Language == "":
		return refusedRun(policy.Invalid("command", "required: a shell command, or language and code"), nil)
	}
	exec := func(ctx context.Context) (*executor.Result, error) { return m.srv.SessionExec(ctx, in.Session, b) }
	if t != nil && time.Duration(*t) < timeout {
		timeout = time.Duration(*t)
		exec = within(timeout, exec)
	}
	res, err := m.run(ctx, req, c, timeout, exec)
	if err != nil {
		return refusedRun(err, res)
	}
	return m.runResult(c, in.Session, res)
}

// errRunTimeout is the cause of the deadline within puts on a run.
var errRunTimeout = errors.New("mcp: the run's timeout")

// within runs f with a deadline d from now, and reports its expiry as
// the sandbox's own timeout would: status timeout. A session's sandboxes
// share the session's policy, timeout included, so a shorter timeout of
// one run is this deadline: the context's end kills the sandbox at once
// (SIGKILL to all of it, as the timeout does), which the executor calls
// cancelled. Unlike the sandbox's timeout, it counts from the call: a
// wait for the session's previous run or for a run slot is inside it;
// when it passes before the program starts, nothing ran, and the result
// says so and that a retry may help (as a timeout during setup does).
func within(d time.Duration, f func(context.Context) (*executor.Result, error)) func(context.Context) (*executor.Result, error) {
	return func(ctx context.Context) (*executor.Result, error) {
		start := time.Now()
		tctx, cancel := context.WithTimeoutCause(ctx, d, errRunTimeout)
		defer cancel()
		res, err := f(tctx)
		if ctx.Err() != nil || !errors.Is(context.Cause(tctx), errRunTimeout) {
			return res, err // not this deadline: the call's end, a drain, or in time
		}
		switch {
		case res != nil && res.Status == nsjail.StatusCancelled:
			res.Status = nsjail.StatusTimeout
			return res, nil
		case res == nil && errors.Is(err, context.DeadlineExceeded):
			return &executor.Result{Result: nsjail.Result{Status: nsjail.StatusTimeout, ExitCode: 128 + int(syscall.SIGKILL), WallTimeMS: time.Since(start).Milliseconds(),
				Error: &policy.ErrorInfo{Class: policy.ClassUnavailable, Retryable: true,
					Message: fmt.Sprintf("the run's timeout of %v passed before the program started (waiting for the session's previous run or a run slot, or setting up the sandbox); nothing ran", d),
					Fix:     "a longer timeout, or retry when the server is less busy"}}}, nil
		}
		return res, err
	}
}

func (m *MCP) sessionClose(ctx context.Context, req *sdk.CallToolRequest, in SessionIn) (*sdk.CallToolResult, SessionOut, error) {
	c, err := m.conn(req.Session)
	if err == nil {
		err = c.owns(in.Session)
	}
	if err != nil {
		return refused(err, SessionOut{Session: in.Session, Error: policy.Describe(err)})
	}
	c.mu.Lock()
	delete(c.sessions, in.Session)
	c.mu.Unlock()
	if err := m.srv.CloseSession(in.Session); err != nil {
		return refused(err, SessionOut{Session: in.Session, Error: policy.Describe(err)})
	}
	return text("session " + in.Session + " closed; its workspace is deleted."), SessionOut{Session: in.Session, Closed: true}, nil
}

func (m *MCP) capabilities(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, CapsOut, error) {
	caps := m.srv.Capabilities()
	out := CapsOut{Capabilities: caps, Connection: ConnLimits{MaxRuns: m.cfg.MaxRuns, MaxSessions: m.cfg.MaxSessions, MaxReturn: m.cfg.MaxReturn}}
	var langs []string
	for _, l := range caps.Languages {
		langs = append(langs, l.Name+" "+l.Version)
	}
	l := caps.Limits
	var b strings.Builder
	fmt.Fprintf(&b, "languages: %s\n", strings.Join(langs, ", "))
	fmt.Fprintf(&b, "each run: timeout %v, memory %d MiB, %d processes, output %d KiB per stream, network %s\n",
		time.Duration(l.Timeout), l.Memory>>20, l.Pids, int64(l.MaxOutput)>>10, l.Net)
	fmt.Fprintf(&b, "this connection: %d runs at once, %d sessions, %d KiB of output per result\n", m.cfg.MaxRuns, m.cfg.MaxSessions, m.cfg.MaxReturn>>10)
	fmt.Fprintf(&b, "host enforcement (structured content has the details): %s\n", enforcedSummary(caps.Host))
	return text(b.String()), out, nil
}
