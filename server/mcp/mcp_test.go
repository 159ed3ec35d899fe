package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
	"github.com/airlock-sandbox/airlock/server/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	nsjail.Init()
	os.Exit(m.Run())
}

// env is an MCP over a real server.Server and executor.
type env struct {
	m   *mcp.MCP
	srv *server.Server
}

// start serves an executor (no pool) through server.Server and MCP;
// mod adjusts the MCP's config. The cleanup closes everything and
// checks that nothing is left.
func start(t *testing.T, mod func(*mcp.Config)) *env {
	t.Helper()
	return startWith(t, nil, mod)
}

// startWith is start with srvMod adjusting the server's config.
func startWith(t *testing.T, srvMod func(*server.Config), mod func(*mcp.Config)) *env {
	t.Helper()
	testutil.RequireUserNS(t)
	work := testutil.WorldReadableDir(t)
	ex, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.Config{Executor: ex, MaxConcurrent: 2}
	if srvMod != nil {
		srvMod(&scfg)
	}
	srv, err := server.New(scfg)
	if err != nil {
		ex.Close()
		t.Fatal(err)
	}
	cfg := mcp.Config{Server: srv, ProgressEvery: 20 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	m, err := mcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Drain(ctx)
		if err := ex.Close(); err != nil {
			t.Errorf("executor close: %v", err)
		}
		testutil.CheckNothingLeft(t, testutil.Left{Work: work})
	})
	return &env{m: m, srv: srv}
}

// connect is a client connection over the SDK's in-memory transport;
// progress, when not nil, gets the progress notifications.
func (e *env) connect(t *testing.T, progress func(*sdk.ProgressNotificationParams)) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := e.m.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &sdk.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { progress(r.Params) }
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// call calls a tool and returns its result and structured output.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	return callCtx(t, t.Context(), cs, name, args, nil)
}

func callCtx(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string, args any, progressToken any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if progressToken != nil {
		p.SetProgressToken(progressToken)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
	}
	return res, out
}

func textOf(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// errorOf is a refused call's error info.
func errorOf(t *testing.T, r *sdk.CallToolResult, out map[string]any) policy.ErrorInfo {
	t.Helper()
	if !r.IsError {
		t.Fatalf("not an error result: %s", textOf(r))
	}
	var info policy.ErrorInfo
	b, _ := json.Marshal(out["error"])
	if err := json.Unmarshal(b, &info); err != nil || info.Class == "" {
		t.Fatalf("no error info in %v (%s)", out, textOf(r))
	}
	return info
}

// Every tool has an input and an output schema and honest annotations.
func TestToolsListed(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run_code", "session_open", "session_run", "session_close", "read_file", "write_file", "list_files", "capabilities",
		"process_start", "process_output", "process_input", "process_signal", "process_list", "http_request"}
	got := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	for _, name := range want {
		tool := got[name]
		if tool == nil {
			t.Errorf("%s: not listed", name)
			continue
		}
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: input schema %v, output schema %v", name, tool.InputSchema != nil, tool.OutputSchema != nil)
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", name)
		}
	}
	if len(res.Tools) != len(want) {
		t.Errorf("%d tools, want %d", len(res.Tools), len(want))
	}
	b, _ := json.Marshal(got["run_code"].InputSchema)
	if !strings.Contains(string(b), `"python"`) || !strings.Contains(string(b), `"required":["language","code"]`) {
		t.Errorf("run_code's input schema: %s", b)
	}
}

// Each tool's annotations are true to what it does: the tools that
// change nothing are read-only; a run is not, and with the default
// policy (no network) it reaches nothing beyond its sandbox; a session's
// run and the file writes may replace files (destructive), run_code's
// fresh sandbox leaves nothing behind. With a network, a run is open
// world and may change it.
func TestToolAnnotations(t *testing.T) {
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	for _, c := range []struct {
		net  policy.Net
		want map[string]hints
	}{
		{policy.NetNone, map[string]hints{
			"run_code":       {false, false, true, false},
			"session_open":   {false, false, false, false},
			"session_run":    {false, true, false, false},
			"session_close":  {false, true, true, false},
			"read_file":      {true, false, true, false},
			"write_file":     {false, true, true, false},
			"list_files":     {true, false, true, false},
			"capabilities":   {true, false, true, false},
			"process_start":  {false, true, false, false},
			"process_output": {true, false, true, false},
			"process_input":  {false, true, false, false},
			"process_signal": {false, true, true, false},
			"process_list":   {true, false, true, false},
			"http_request":   {false, true, false, false},
		}},
		{policy.NetHost, map[string]hints{
			"run_code":       {false, true, false, true},
			"session_open":   {false, false, false, false},
			"session_run":    {false, true, false, true},
			"session_close":  {false, true, true, false},
			"read_file":      {true, false, true, false},
			"write_file":     {false, true, true, false},
			"list_files":     {true, false, true, false},
			"capabilities":   {true, false, true, false},
			"process_start":  {false, true, false, true},
			"process_output": {true, false, true, false},
			"process_input":  {false, true, false, true},
			"process_signal": {false, true, true, false},
			"process_list":   {true, false, true, false},
			"http_request":   {false, true, false, true},
		}},
	} {
		e := startWith(t, func(sc *server.Config) { sc.Policy.Net = c.net }, nil)
		res, err := e.connect(t, nil).ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != len(c.want) {
			t.Errorf("net %s: %d tools, want %d", c.net, len(res.Tools), len(c.want))
		}
		for _, tool := range res.Tools {
			a, want := tool.Annotations, c.want[tool.Name]
			if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil || a.Title == "" {
				t.Errorf("net %s: %s: annotations %+v: want every hint set and a title", c.net, tool.Name, a)
				continue
			}
			if got := (hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}); got != want {
				t.Errorf("net %s: %s: {readOnly destructive idempotent openWorld} %+v, want %+v", c.net, tool.Name, got, want)
			}
		}
	}
}

// No tool says a background process dies with each call; the tools that
// run in a session and the instructions say it lives until the session
// closes; run_code says it is one-shot. What they say holds: a sleep left
// in the background by one session_run is there in the next (seen from
// the host too), and gone, from the host's view, once the session
// closes.
func TestDescriptionsBackground(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.Contains(tool.Description, "killed when the call returns") || strings.Contains(tool.Description, "nothing runs between calls") {
			t.Errorf("%s's description says a background process dies with its call: %q", tool.Name, tool.Description)
		}
		switch tool.Name {
		case "session_open", "process_start":
			if !strings.Contains(tool.Description, "background") || !strings.Contains(tool.Description, "session close") && !strings.Contains(tool.Description, "session_close") {
				t.Errorf("%s's description does not say background processes live until the session closes: %q", tool.Name, tool.Description)
			}
		case "run_code":
			if !strings.Contains(tool.Description, "one-shot") {
				t.Errorf("run_code's description does not say it is one-shot: %q", tool.Description)
			}
		}
	}
	if in := cs.InitializeResult().Instructions; !strings.Contains(in, "background processes last across calls") || strings.Contains(in, "killed when its call returns") {
		t.Errorf("the instructions: %q", in)
	}
	_, out := call(t, cs, "session_open", nil)
	id := out["session"].(string)
	marker := uniqueSleep()
	if r, out := call(t, cs, "session_run", map[string]any{"session": id, "command": "sleep " + marker + " > /dev/null 2>&1 & echo started"}); r.IsError || out["status"] != "ok" || out["stdout"] != "started\n" {
		t.Fatalf("sleep in the background: %v %s", out, textOf(r))
	}
	if r, out := call(t, cs, "session_run", map[string]any{"session": id, "command": "ps -e -o args= | grep -cx 'sleep " + marker + "'"}); r.IsError || out["stdout"] != "1\n" {
		t.Fatalf("the background sleep is not there in the next call: %v %s", out, textOf(r))
	}
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 1 {
		t.Fatalf("the host sees %d processes 'sleep %s', want 1", n, marker)
	}
	if r, _ := call(t, cs, "session_close", map[string]any{"session": id}); r.IsError {
		t.Fatalf("close: %s", textOf(r))
	}
	if n := len(testutil.HostProcsWith("sleep", marker)); n != 0 {
		t.Fatalf("after session_close the host sees %d processes 'sleep %s'", n, marker)
	}
}

// Every name REST takes for a language, aliases included, is in the
// run tools' language enum and description, and runs: javascript runs
// node, through run_code and session_run.
func TestLanguageAliases(t *testing.T) {
	testutil.RequireBinary(t, "node")
	e := start(t, nil)
	cs := e.connect(t, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "run_code" && tool.Name != "session_run" {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]struct {
				Description string `json:"description"`
				Enum        []string
			}
		}
		json.Unmarshal(b, &s)
		lang := s.Properties["language"]
		for _, l := range e.srv.Languages() {
			for _, n := range append([]string{l.Name}, l.Aliases...) {
				if !slices.Contains(lang.Enum, n) || !strings.Contains(lang.Description, n) {
					t.Errorf("%s: language %q not in the enum %v or the description %q", tool.Name, n, lang.Enum, lang.Description)
				}
			}
		}
		if !slices.Contains(lang.Enum, "javascript") {
			t.Errorf("%s: javascript not in the enum %v", tool.Name, lang.Enum)
		}
	}
	const code = "console.log('js', process.argv.at(-1), 6 * 7)"
	r, out := call(t, cs, "run_code", map[string]any{"language": "javascript", "code": code, "args": []string{"a"}})
	if r.IsError || out["status"] != "ok" || out["stdout"] != "js a 42\n" {
		t.Fatalf("run_code javascript: %v %s", out, textOf(r))
	}
	_, out = call(t, cs, "session_open", nil)
	id := out["session"].(string)
	for _, lang := range []string{"javascript", "js", "nodejs"} {
		r, out = call(t, cs, "session_run", map[string]any{"session": id, "language": lang, "code": code, "args": []string{lang}})
		if r.IsError || out["status"] != "ok" || out["stdout"] != "js "+lang+" 42\n" {
			t.Fatalf("session_run %s: %v %s", lang, out, textOf(r))
		}
	}
}

// session_run's timeout: a run past it is killed, status timeout (a
// normal result, as run_code's), and the session goes on; one above the
// session's timeout, or not a positive number, is refused and runs
// nothing.
func TestSessionRunTimeout(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	_, out := call(t, cs, "session_open", map[string]any{"timeout": 20})
	id := out["session"].(string)
	r, out := call(t, cs, "session_run", map[string]any{"session": id, "command": "echo started; sleep 30; touch late", "timeout": 1})
	if r.IsError || out["status"] != "timeout" || out["stdout"] != "started\n" || !strings.Contains(textOf(r), "timeout") {
		t.Fatalf("sleep 30 with timeout 1: %v %s", out, textOf(r))
	}
	// The run's timeout, not the session's, ended it: a program that
	// ends well within the session's 20 s is killed too.
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": "sleep 10; echo late", "timeout": 1})
	if r.IsError || out["status"] != "timeout" || out["stdout"] != "" {
		t.Fatalf("sleep 10 with timeout 1: %v %s", out, textOf(r))
	}
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": "echo in time", "timeout": 10})
	if r.IsError || out["status"] != "ok" || out["stdout"] != "in time\n" {
		t.Fatalf("a run within its timeout: %v %s", out, textOf(r))
	}
	for _, c := range []struct {
		timeout float64
		why     string
	}{{21, "above the session's timeout"}, {-1, "negative"}, {1e5, "above the served timeout"}} {
		r, out := call(t, cs, "session_run", map[string]any{"session": id, "command": "touch refused", "timeout": c.timeout})
		if info := errorOf(t, r, out); info.Class != policy.ClassInvalid || info.Retryable || info.Field != "timeout" || out["status"] != "error" {
			t.Errorf("timeout %v (%s): %+v %s", c.timeout, c.why, info, textOf(r))
		}
	}
	for _, f := range []string{"late", "refused"} {
		if r, out := call(t, cs, "read_file", map[string]any{"session": id, "path": f}); !r.IsError {
			t.Errorf("%s exists: the killed run went on, or a refused one ran: %v", f, out)
		}
	}
}

// A program's outcome is a normal result; a refusal is isError with
// the class and whether a retry can help.
func TestRunCode(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	e := start(t, nil)
	cs := e.connect(t, nil)

	r, out := call(t, cs, "run_code", map[string]any{"language": "python", "code": "import sys; print(sys.argv[1:], sys.stdin.read()); open('f.txt').read()",
		"args": []string{"a", "b"}, "stdin": "in", "files": []map[string]string{{"name": "f.txt", "content": "x"}}})
	if r.IsError || out["status"] != "ok" || out["stdout"] != "['a', 'b'] in\n" || !strings.Contains(textOf(r), "status: ok") {
		t.Fatalf("ok: %v %v %s", r.IsError, out, textOf(r))
	}

	r, out = call(t, cs, "run_code", map[string]any{"language": "bash", "code": "echo oops >&2; exit 3"})
	if r.IsError || out["status"] != "exited" || out["exit_code"] != 3.0 || out["stderr"] != "oops\n" || !strings.Contains(textOf(r), "exited with code 3") {
		t.Fatalf("exit 3: %v %v %s", r.IsError, out, textOf(r))
	}

	r, out = call(t, cs, "run_code", map[string]any{"language": "bash", "code": "sleep 30", "timeout": 0.3})
	if r.IsError || out["status"] != "timeout" {
		t.Fatalf("timeout: %v %v %s", r.IsError, out, textOf(r))
	}

	// Past the served timeout: refused, nothing ran.
	r, out = call(t, cs, "run_code", map[string]any{"language": "bash", "code": "echo ran", "timeout": 1e5})
	info := errorOf(t, r, out)
	if info.Class != policy.ClassInvalid || info.Retryable || out["status"] != "error" || !strings.Contains(textOf(r), "do not retry") || strings.Contains(textOf(r), "ran\n") {
		t.Fatalf("above the ceiling: %+v %v %s", info, out, textOf(r))
	}

	// Schema violations: isError from the SDK's check, with the structured
	// error of any invalid request (the field at fault), said not to
	// retry; nothing ran (the marker file would be in the session).
	_, out = call(t, cs, "session_open", nil)
	id := out["session"].(string)
	for _, c := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"run_code", map[string]any{"code": "x"}, "language"},
		{"run_code", map[string]any{"language": "cobol", "code": "x"}, "language"},
		{"run_code", map[string]any{"language": "bash", "code": 7}, "code"},
		{"run_code", map[string]any{"language": "bash", "code": "touch ran", "rm": true}, "rm"},
		{"session_run", map[string]any{"session": id, "command": "touch ran", "background": true}, "background"},
		{"session_run", map[string]any{"session": id, "command": "touch ran", "timeout": "1s"}, "timeout"},
		{"session_run", map[string]any{"session": id, "command": []string{"touch", "ran"}}, "command"},
		{"write_file", map[string]any{"session": id, "path": 1, "content": "x"}, "path"},
		{"list_files", map[string]any{}, "session"},
		{"session_open", map[string]any{"idle_timeout": "1h"}, "idle_timeout"},
	} {
		r, out := call(t, cs, c.tool, c.args)
		info := errorOf(t, r, out)
		if info.Class != policy.ClassInvalid || info.Retryable || info.Field != c.field || !strings.Contains(info.Message, c.tool+"'s input schema") ||
			!strings.Contains(textOf(r), "do not retry as is") {
			t.Errorf("%s %v: %+v %s", c.tool, c.args, info, textOf(r))
		}
	}
	if r, out := call(t, cs, "capabilities", map[string]any{"x": 1}); !r.IsError || out != nil || !strings.Contains(textOf(r), "do not retry as is") {
		t.Errorf("capabilities with an argument: %v %s", out, textOf(r))
	}
	if r, out := call(t, cs, "list_files", map[string]any{"session": id}); r.IsError || len(out["files"].([]any)) != 0 {
		t.Errorf("something ran in the session: %v", out)
	}
	// An unknown tool is a protocol error, -32602 (the MCP spec's rule),
	// naming the tools.
	_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "rm_rf"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `unknown tool "rm_rf"`) ||
		!strings.Contains(werr.Message, "capabilities, http_request, list_files, process_input, process_list, process_output, process_signal, process_start, read_file, run_code, session_close, session_open, session_run, write_file") ||
		!strings.Contains(werr.Message, "nothing ran") {
		t.Errorf("unknown tool: %v", err)
	}
}

// A session keeps its workspace; files are read and written without
// running anything, never outside the workspace; sessions belong to
// their connection; resources read the same files.
func TestSession(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	r, out := call(t, cs, "session_open", map[string]any{"timeout": 10})
	id, _ := out["session"].(string)
	if r.IsError || id == "" {
		t.Fatalf("open: %s", textOf(r))
	}
	r, out = call(t, cs, "write_file", map[string]any{"session": id, "path": "dir/in.txt", "content": "hello"})
	if r.IsError || out["size"] != 5.0 {
		t.Fatalf("write: %s", textOf(r))
	}
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": "cat dir/in.txt; echo -n ' world' > out.txt; ln -s /etc/passwd link; ln -s ../../ up"})
	if r.IsError || out["stdout"] != "hello" || out["status"] != "ok" {
		t.Fatalf("run: %v %s", out, textOf(r))
	}
	r, out = call(t, cs, "read_file", map[string]any{"session": id, "path": "out.txt"})
	if r.IsError || out["content"] != " world" {
		t.Fatalf("read: %v %s", out, textOf(r))
	}
	r, out = call(t, cs, "list_files", map[string]any{"session": id})
	if files, _ := out["files"].([]any); r.IsError || len(files) < 3 {
		t.Fatalf("list: %v %s", out, textOf(r))
	}
	rr, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "airlock://session/" + id + "/dir/in.txt"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello" {
		t.Fatalf("resource: %v %+v", err, rr)
	}

	// Paths out of the workspace: refused, nothing touched.
	for _, p := range []string{"../x", "/etc/passwd", "link", "up/x", "dir/../../x", ""} {
		r, out := call(t, cs, "read_file", map[string]any{"session": id, "path": p})
		if info := errorOf(t, r, out); info.Class != policy.ClassInvalid || info.Retryable || info.Field != "path" {
			t.Errorf("read %q: %+v", p, info)
		}
		r, out = call(t, cs, "write_file", map[string]any{"session": id, "path": p, "content": "x"})
		if info := errorOf(t, r, out); info.Class != policy.ClassInvalid || info.Retryable || info.Field != "path" {
			t.Errorf("write %q: %+v", p, info)
		}
	}
	if b, err := os.ReadFile("/etc/passwd"); err != nil || strings.Contains(string(b), "\nx") || string(b) == "x" {
		t.Fatalf("/etc/passwd: %v", err)
	}

	// Another connection does not see this one's session.
	other := e.connect(t, nil)
	r, out = call(t, other, "read_file", map[string]any{"session": id, "path": "out.txt"})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid {
		t.Fatalf("other connection: %+v", info)
	}
	if _, err := other.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "airlock://session/" + id + "/dir/in.txt"}); err == nil {
		t.Fatal("other connection read the resource")
	}

	r, out = call(t, cs, "session_close", map[string]any{"session": id})
	if r.IsError || out["closed"] != true {
		t.Fatalf("close: %s", textOf(r))
	}
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": "true"})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid {
		t.Fatalf("closed session: %+v", info)
	}
}

// Per connection: runs going and sessions open are bounded (a retry
// can help), and a cancelled call ends its run. Progress comes while a
// run goes.
func TestConnectionLimits(t *testing.T) {
	e := start(t, func(c *mcp.Config) { c.MaxRuns, c.MaxSessions = 1, 1 })
	var once sync.Once
	running := make(chan struct{})
	cs := e.connect(t, func(*sdk.ProgressNotificationParams) { once.Do(func() { close(running) }) })

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, withToken(&sdk.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "sleep 60"}}, "p1"))
		done <- err
	}()
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		t.Fatal("no progress notification")
	}
	r, out := call(t, cs, "run_code", map[string]any{"language": "bash", "code": "echo second"})
	if info := errorOf(t, r, out); info.Class != policy.ClassUnavailable || !info.Retryable || !strings.Contains(textOf(r), "retry may help") {
		t.Fatalf("second run: %+v %s", info, textOf(r))
	}
	// Another connection has its own budget.
	other := e.connect(t, nil)
	if r, out := call(t, other, "run_code", map[string]any{"language": "bash", "code": "echo other"}); r.IsError || out["stdout"] != "other\n" {
		t.Fatalf("other connection: %s", textOf(r))
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	// The slot comes back once the run ended.
	if !testutil.WaitFor(10*time.Second, func() bool {
		r, _ := call(t, cs, "run_code", map[string]any{"language": "bash", "code": "echo again"})
		return !r.IsError
	}) {
		t.Fatal("the run slot did not come back after the cancel")
	}

	r, _ = call(t, cs, "session_open", nil)
	if r.IsError {
		t.Fatalf("open: %s", textOf(r))
	}
	r, out = call(t, cs, "session_open", nil)
	if info := errorOf(t, r, out); info.Class != policy.ClassUnavailable || !info.Retryable {
		t.Fatalf("second session: %+v", info)
	}
}

func withToken(p *sdk.CallToolParams, tok any) *sdk.CallToolParams {
	p.SetProgressToken(tok)
	return p
}

// Output past the connection's cap is cut with a note; in a session the
// full output is saved as a file.
func TestTruncation(t *testing.T) {
	e := start(t, func(c *mcp.Config) { c.MaxReturn = 1000 })
	cs := e.connect(t, nil)
	code := "for i in $(seq 1000); do echo line$i; done"
	r, out := call(t, cs, "run_code", map[string]any{"language": "bash", "code": code})
	stdout, _ := out["stdout"].(string)
	note, _ := out["output_note"].(string)
	if r.IsError || len(stdout) > 1100 || !strings.HasPrefix(stdout, "line1\n") || !strings.HasSuffix(stdout, "line1000\n") || out["stdout_truncated"] != true ||
		!strings.Contains(note, "not kept") || !strings.Contains(textOf(r), "bytes cut") {
		t.Fatalf("run_code: %d bytes, note %q", len(stdout), note)
	}

	_, out = call(t, cs, "session_open", nil)
	id := out["session"].(string)
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": code})
	note, _ = out["output_note"].(string)
	if r.IsError || !strings.Contains(note, ".airlock/output-1.stdout") {
		t.Fatalf("session_run: %v %s", out, textOf(r))
	}
	r, out = call(t, cs, "session_run", map[string]any{"session": id, "command": "wc -l < .airlock/output-1.stdout"})
	if r.IsError || out["stdout"] != "1000\n" {
		t.Fatalf("the saved output: %v", out)
	}
	// read_file caps what it returns the same way.
	r, out = call(t, cs, "read_file", map[string]any{"session": id, "path": ".airlock/output-1.stdout"})
	if content, _ := out["content"].(string); r.IsError || len(content) != 1000 || out["truncated"] != true {
		t.Fatalf("read_file: %d bytes, %v", len(content), out["truncated"])
	}
}

// capabilities reports languages, limits and the connection's limits.
func TestCapabilities(t *testing.T) {
	e := start(t, nil)
	cs := e.connect(t, nil)
	r, out := call(t, cs, "capabilities", nil)
	if r.IsError || out["connection"] == nil || out["limits"] == nil || out["host"] == nil || !strings.Contains(textOf(r), "languages: ") {
		t.Fatalf("%v %s", out, textOf(r))
	}
}

// A file past the server's --max-request is refused, and nothing is
// written.
func TestOversizedFile(t *testing.T) {
	e := startWith(t, func(c *server.Config) { c.MaxRequest = 1024 }, nil)
	cs := e.connect(t, nil)
	_, out := call(t, cs, "session_open", nil)
	id := out["session"].(string)
	r, out := call(t, cs, "write_file", map[string]any{"session": id, "path": "big", "content": strings.Repeat("x", 2048)})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid || info.Retryable {
		t.Fatalf("oversized: %+v", info)
	}
	r, out = call(t, cs, "read_file", map[string]any{"session": id, "path": "big"})
	if info := errorOf(t, r, out); info.Class != policy.ClassInvalid {
		t.Fatalf("the refused file exists: %+v", info)
	}
}
