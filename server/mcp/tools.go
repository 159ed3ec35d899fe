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
	FilesOmitted    *int               `json:"files_omitted,omitempty" jsonschema:"how many more files /workspace holds than files lists (list_files lists more)"`
	PID             int                `json:"pid,omitempty" jsonschema:"the run's process id in the session's sandbox"`
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
	Session     string `json:"session"`
	Closed      bool   `json:"closed,omitempty"`
	IdleTimeout string `json:"idle_timeout,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
	// WorkspaceLimit is the size of the session's /workspace.
	WorkspaceLimit int64             `json:"workspace_limit_bytes,omitempty" jsonschema:"the most bytes /workspace holds (a write past it fails: no space left on device)"`
	Lifetime       string            `json:"lifetime,omitempty" jsonschema:"the session closes this long after it opened, however busy"`
	Error          *policy.ErrorInfo `json:"error,omitempty"`
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
	Total   int                `json:"total" jsonschema:"entries found under /workspace"`
	Omitted int                `json:"omitted" jsonschema:"entries found but not listed (the cap)"`
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
	startSchema, err := jsonschema.For[ProcessStartIn](nil)
	if err != nil {
		return fmt.Errorf("mcp: BUG: process_start schema: %w", err)
	}
	// language: every name a request may give (executor's one table, as
	// the REST routes take it: names and aliases), as an enum and said.
	langDesc := "the language of code: " + languagesText(langs)
	for _, s := range []*jsonschema.Schema{runSchema, sessRunSchema, startSchema} {
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
	// without one nothing it does outlives its sandbox but a session's
	// files and processes. The file tools and session_open/close touch
	// only a session; read_file, list_files, process_output (it moves
	// only this connection's read offsets), process_list (it reads the
	// sandbox's /proc/net/tcp) and capabilities change nothing.
	ann := func(title string, readOnly, destructive, idempotent, open bool) *sdk.ToolAnnotations {
		return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &open}
	}
	// What a session keeps, said alike by every tool that runs in one.
	keeps := "A session is one sandbox that lives until session_close, its idle timeout or the end of this connection: " +
		"its /workspace files and the processes left running in the background (cmd &, a server, a watcher) last across calls, " +
		"and a server in it is reached with http_request. Prefer process_start for servers and long jobs: it returns at once with a pid."
	net := "no network"
	if p.Network() == policy.NetLoopback {
		net = "only the sandbox's own loopback network"
	} else if m.open {
		net = "network: " + string(p.Network())
	}
	limits := fmt.Sprintf("Limits: %v a run (timeout), %d MiB of memory, %s; at most %d KiB of stdout and stderr in the result (capabilities lists all).", served, p.MemoryLimit()>>20, net, m.cfg.MaxReturn>>10)
	addTool(m, &sdk.Tool{Name: "run_code", InputSchema: runSchema, Annotations: ann("Run code in a fresh sandbox", false, m.open, !m.open, m.open),
		Description: "Runs code in a fresh, isolated sandbox (languages: " + strings.Join(names, ", ") + ") and returns its exit status, stdout and stderr. " +
			"It is one-shot: the sandbox, its files and anything it started end with the call. To keep files or processes (a server) across calls, use a session (session_open). " + limits}, m.runCode)
	addTool(m, &sdk.Tool{Name: "session_open", InputSchema: openSchema, Annotations: ann("Open a sandbox session", false, false, false, false),
		Description: fmt.Sprintf("Opens a session and returns its id: a sandbox kept for session_run, the process_* tools, http_request and the file tools. "+
			"%s Its /workspace is a bounded in-memory file system (workspace_limit_bytes in the result; a write past it fails with no space left on device). "+
			"At most %d sessions open per connection; close it with session_close when done.", keeps, m.cfg.MaxSessions)}, m.sessionOpen)
	addTool(m, &sdk.Tool{Name: "session_run", InputSchema: sessRunSchema, Annotations: ann("Run in a session", false, true, false, m.open),
		Description: "Runs a shell command (command, by bash) or code (language and code) in the session's sandbox, in /workspace, and waits for it: returns its exit status, stdout and stderr. " +
			"Each call is a new shell (cd and variables do not carry over); files and background processes do. A command that ends with cmd & returns while cmd runs on " +
			"(redirect its output to a file, e.g. cmd > log 2>&1 &, or use process_start to read it later). The code is kept outside /workspace: no file of yours is overwritten. " +
			fmt.Sprintf("Output past %d KiB is cut in the result and saved whole in the workspace (output_note says where).", m.cfg.MaxReturn>>10)}, m.sessionRun)
	addTool(m, &sdk.Tool{Name: "session_close", Annotations: ann("Close a session", false, true, true, false),
		Description: "Closes a session: kills every process in it and deletes its workspace and every file in it."}, m.sessionClose)
	addTool(m, &sdk.Tool{Name: "process_start", InputSchema: startSchema, Annotations: ann("Start a background process", false, true, false, m.open),
		Description: "Starts a process in the session's sandbox in the background and returns at once with its pid: a shell command (command, by bash), a program (argv), or code (language and code). " +
			"It runs until it ends, process_signal stops it, its timeout (if given) passes, or the session closes: later calls reach it. " +
			"Read its output with process_output, write its stdin with process_input (start it with stdin: true), see it and the ports listening with process_list, " +
			"and send HTTP requests to a server it runs with http_request (e.g. command \"python3 -m http.server 8000\", then http_request port 8000)."}, m.processStart)
	addTool(m, &sdk.Tool{Name: "process_output", Annotations: ann("Read a process's output", true, false, true, false),
		Description: fmt.Sprintf("Returns the stdout and stderr a session's process (pid) wrote since the last process_output call on it (or from stdout_offset and stderr_offset), "+
			"whether it is still running, and once it ended its exit code and status. wait (seconds) waits for new output or the end when there is none yet. "+
			"At most %d KiB a call: more: true says to call again. The process keeps the last %d KiB of each stream (dropped counts older bytes skipped).",
			m.cfg.MaxReturn>>10, int64(p.MaxOutput)>>10)}, m.processOutput)
	addTool(m, &sdk.Tool{Name: "process_input", Annotations: ann("Write to a process's stdin", false, true, false, m.open),
		Description: "Writes data to the standard input of a session's process started with stdin: true (include the newline a line-reading program waits for); close: true then ends its input. " +
			"Its answer comes in process_output."}, m.processInput)
	addTool(m, &sdk.Tool{Name: "process_signal", Annotations: ann("Signal a process", false, true, true, false),
		Description: "Sends a signal (TERM by default; KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT) to a session's process and the processes it started (its process group). " +
			"Returns its state: process_output then has its exit code."}, m.processSignal)
	addTool(m, &sdk.Tool{Name: "process_list", Annotations: ann("List a session's processes and ports", true, false, true, false),
		Description: "Lists a session's processes (pid, argv, running or exited with its exit code; recently ended ones included) and the TCP ports something listens on inside its sandbox: " +
			"the ports http_request can reach. A server shows its port here once it is ready."}, m.processList)
	addTool(m, &sdk.Tool{Name: "http_request", Annotations: ann("HTTP request into a session", false, true, false, m.open),
		Description: fmt.Sprintf("Sends an HTTP request to a server listening on a port of the session's sandbox (its own loopback: 127.0.0.1 or ::1 inside; nothing else is reachable) "+
			"and returns its status, headers and body (at most %d KiB; truncated: true past it; base64 when not text). Redirects are returned, not followed. "+
			"The port is the one the server was told to listen on; process_list shows the listening ports. Connection refused means nothing listens there yet: "+
			"check process_output of the server and retry.", m.cfg.MaxReturn>>10)}, m.httpRequest)
	addTool(m, &sdk.Tool{Name: "read_file", Annotations: ann("Read a session file", true, false, true, false),
		Description: fmt.Sprintf("Reads a file of a session's /workspace (path relative to it), without running anything. "+
			"Returns at most the first %d KiB (truncated: true past it; read further parts with session_run, e.g. tail -c); content that is not UTF-8 comes as base64.", m.cfg.MaxReturn>>10)}, m.readFile)
	addTool(m, &sdk.Tool{Name: "write_file", Annotations: ann("Write a session file", false, true, true, false),
		Description: "Creates or replaces a file of a session's /workspace (path relative to it; parent directories are made), without running anything; the sandbox's processes may read and write it. " +
			"content is text, or base64 or hex as encoding says; at most the server's max_request bytes (capabilities) and the room left in the workspace."}, m.writeFile)
	addTool(m, &sdk.Tool{Name: "list_files", Annotations: ann("List session files", true, false, true, false),
		Description: fmt.Sprintf("Lists the files under a session's /workspace, subdirectories included, with their sizes in bytes (at most %d entries; total and omitted say how many there are beyond).", maxListed)}, m.listFiles)
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
	out := SessionOut{Session: info.ID, IdleTimeout: time.Duration(info.IdleTimeout).String(), Timeout: time.Duration(info.Policy.Timeout).String(),
		WorkspaceLimit: info.Workspace.Limit, Lifetime: server.SessionLifetime.String()}
	return text(fmt.Sprintf("session %s open: one sandbox whose /workspace (%d MiB at most) and background processes last across calls; each session_run may take %s; "+
		"it closes itself (killing its processes, deleting its files) after %s unused, or %s after it opened.",
		out.Session, out.WorkspaceLimit>>20, out.Timeout, out.IdleTimeout, out.Lifetime)), out, nil
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
	// A run's own timeout is its process's: on expiry it is killed
	// (status timeout), and what it left in the background lives on.
	var own time.Duration
	if t != nil {
		own, timeout = time.Duration(*t), time.Duration(*t)
	}
	var sres *server.SessionResult
	res, err := m.run(ctx, req, c, timeout, func(ctx context.Context) (*executor.Result, error) {
		var err error
		sres, err = m.srv.SessionExec(ctx, in.Session, b, own)
		if sres == nil {
			return nil, err
		}
		return &sres.Result, err
	})
	if err != nil {
		return refusedRun(err, res)
	}
	r, out, err := m.runResult(c, in.Session, res)
	if sres != nil {
		out.PID, out.FilesOmitted = sres.PID, sres.FilesOmitted
	}
	return r, out, err
}

func (m *MCP) sessionClose(ctx context.Context, req *sdk.CallToolRequest, in SessionIn) (*sdk.CallToolResult, SessionOut, error) {
	c, err := m.conn(req.Session)
	if err == nil {
		err = c.owns(in.Session)
	}
	if err != nil {
		return refused(err, SessionOut{Session: in.Session, Error: policy.Describe(err)})
	}
	c.forget(in.Session)
	if err := m.srv.CloseSession(in.Session); err != nil {
		return refused(err, SessionOut{Session: in.Session, Error: policy.Describe(err)})
	}
	return text("session " + in.Session + " closed: its processes are killed and its workspace is deleted."), SessionOut{Session: in.Session, Closed: true}, nil
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
