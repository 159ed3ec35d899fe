package mcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
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
	Language string   `json:"language" jsonschema:"the language of code (see capabilities)"`
	Code     string   `json:"code" jsonschema:"the program's source"`
	Stdin    string   `json:"stdin,omitempty" jsonschema:"the program's standard input"`
	Args     []string `json:"args,omitempty" jsonschema:"the program's arguments"`
	Timeout  float64  `json:"timeout,omitempty" jsonschema:"wall-clock limit in seconds; default and maximum: the served timeout"`
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
	Timeout     float64           `json:"timeout,omitempty" jsonschema:"each run's wall-clock limit in seconds; default and maximum: the served timeout"`
	IdleTimeout float64           `json:"idle_timeout,omitempty" jsonschema:"seconds without use after which the session closes itself; default and maximum: the server's"`
	Env         map[string]string `json:"env,omitempty" jsonschema:"environment variables of every run"`
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
	Language string   `json:"language,omitempty" jsonschema:"the language of code"`
	Code     string   `json:"code,omitempty"`
	Stdin    string   `json:"stdin,omitempty"`
	Args     []string `json:"args,omitempty" jsonschema:"arguments of code"`
}

// SessionIn is session_close's and list_files' input.
type SessionIn struct {
	Session string `json:"session" jsonschema:"the id session_open returned"`
}

// ReadFileIn is read_file's input.
type ReadFileIn struct {
	Session string `json:"session"`
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
	Session  string `json:"session"`
	Path     string `json:"path" jsonschema:"path relative to /workspace; parent directories are made"`
	Content  string `json:"content"`
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
	langs := m.srv.LanguageNames()
	runSchema, err := jsonschema.For[RunCodeIn](nil)
	if err != nil {
		return fmt.Errorf("mcp: BUG: run_code schema: %w", err)
	}
	sessRunSchema, err := jsonschema.For[SessionRunIn](nil)
	if err != nil {
		return fmt.Errorf("mcp: BUG: session_run schema: %w", err)
	}
	for _, s := range []*jsonschema.Schema{runSchema, sessRunSchema} {
		for _, l := range langs {
			s.Properties["language"].Enum = append(s.Properties["language"].Enum, l)
		}
	}
	ann := func(title string, idempotent bool) *sdk.ToolAnnotations {
		destructive := true
		return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: false, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &m.open}
	}
	closed := false
	local := func(title string, destructive, idempotent bool) *sdk.ToolAnnotations {
		return &sdk.ToolAnnotations{Title: title, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &closed}
	}
	addTool(m, &sdk.Tool{Name: "run_code", InputSchema: runSchema, Annotations: ann("Run code in a fresh sandbox", false),
		Description: "Runs code in a fresh, isolated sandbox (languages: " + strings.Join(langs, ", ") + ") and returns its exit status, stdout and stderr. Files written there are discarded; use a session to keep them."}, m.runCode)
	addTool(m, &sdk.Tool{Name: "session_open", Annotations: local("Open a sandbox session", false, false),
		Description: "Opens a session: a /workspace kept across runs (each run is a fresh sandbox over it). Returns its id. Close it with session_close."}, m.sessionOpen)
	addTool(m, &sdk.Tool{Name: "session_run", InputSchema: sessRunSchema, Annotations: ann("Run in a session", false),
		Description: "Runs a shell command (command), or code (language, code), in a fresh sandbox over the session's /workspace, its working directory."}, m.sessionRun)
	addTool(m, &sdk.Tool{Name: "session_close", Annotations: local("Close a session", true, true),
		Description: "Closes a session and deletes its workspace."}, m.sessionClose)
	addTool(m, &sdk.Tool{Name: "read_file", Annotations: local("Read a session file", false, true),
		Description: "Reads a file of a session's /workspace (a path relative to it)."}, m.readFile)
	addTool(m, &sdk.Tool{Name: "write_file", Annotations: local("Write a session file", true, true),
		Description: "Creates or replaces a file of a session's /workspace (a path relative to it), without running anything."}, m.writeFile)
	addTool(m, &sdk.Tool{Name: "list_files", Annotations: local("List session files", false, true),
		Description: "Lists the files of a session's /workspace with their sizes."}, m.listFiles)
	capsSchema, err := jsonschema.For[CapsOut](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		// Durations marshal as "1m30s", sizes as numbers of bytes.
		reflect.TypeFor[policy.Duration](): {Type: "string"},
	}})
	if err != nil {
		return fmt.Errorf("mcp: BUG: capabilities schema: %w", err)
	}
	addTool(m, &sdk.Tool{Name: "capabilities", OutputSchema: capsSchema, Annotations: local("Sandbox capabilities", false, true),
		Description: "The installed languages, the limits of each run and of this connection, and what this host enforces (namespaces, seccomp, cgroups, Landlock)."}, m.capabilities)
	slices.Sort(m.tools)
	return nil
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
	c.sessions[info.ID] = true
	out := SessionOut{Session: info.ID, IdleTimeout: time.Duration(info.IdleTimeout).String(), Timeout: time.Duration(info.Policy.Timeout).String()}
	return text(fmt.Sprintf("session %s open: /workspace is kept across session_run calls; each run may take %s; it closes itself after %s unused.", out.Session, out.Timeout, out.IdleTimeout)), out, nil
}

func (m *MCP) sessionRun(ctx context.Context, req *sdk.CallToolRequest, in SessionRunIn) (*sdk.CallToolResult, RunOut, error) {
	c, err := m.conn(req.Session)
	if err != nil {
		return refusedRun(err, nil)
	}
	if err := c.owns(in.Session); err != nil {
		return refusedRun(err, nil)
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
	timeout := time.Duration(m.srv.Policy().Timeout) // the session's own is at most this
	res, err := m.run(ctx, req, c, timeout, func(ctx context.Context) (*executor.Result, error) {
		return m.srv.SessionExec(ctx, in.Session, b)
	})
	if err != nil {
		return refusedRun(err, res)
	}
	return m.runResult(c, in.Session, res)
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
