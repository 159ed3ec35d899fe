package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// text is a successful result's readable block.
func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// retryHint says whether a retry can help, from an error's class.
func retryHint(info *policy.ErrorInfo) string {
	switch {
	case info.Retryable:
		return "a retry may help: the server is busy or a resource was short; wait a moment and retry"
	case info.Class == policy.ClassInvalid:
		return "do not retry as is: fix the request"
	case info.Class == policy.ClassUnsupported:
		return "do not retry: this host cannot enforce what was asked"
	}
	return "do not retry: the sandbox failed on the server's side"
}

// refusalText is the readable block of a refused call.
func refusalText(info *policy.ErrorInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused (%s", info.Class)
	if info.Field != "" {
		fmt.Fprintf(&b, ", field %s", info.Field)
	}
	fmt.Fprintf(&b, "): %s\n%s", info.Message, retryHint(info))
	if info.Fix != "" {
		fmt.Fprintf(&b, "\nfix: %s", info.Fix)
	}
	return b.String()
}

// refused is a tool result with isError for err, with out as its
// structured content.
func refused[Out any](err error, out Out) (*sdk.CallToolResult, Out, error) {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: refusalText(policy.Describe(err))}}}, out, nil
}

// refusedRun is refused for run tools: status error (or the library's
// result, e.g. setup_error), exit code of the class.
func refusedRun(err error, res *executor.Result) (*sdk.CallToolResult, RunOut, error) {
	if res == nil {
		res = executor.ErrorResult(err)
	}
	out := RunOut{Status: string(res.Status), ExitCode: res.ExitCode, Signal: res.Signal, Error: policy.Describe(err),
		WallTimeMS: res.WallTimeMS, CPUTimeMS: res.CPUTimeMS, MemoryPeakBytes: res.MemoryPeakBytes}
	return refused(err, out)
}

// runResult is the result of a run that has an outcome: never isError
// for the program's own failure; isError for a sandbox that failed to
// set up (its Error says whether a retry can help). Output past
// MaxReturn is cut, and saved in the session when there is one.
func (m *MCP) runResult(c *conn, session string, res *executor.Result) (*sdk.CallToolResult, RunOut, error) {
	out := RunOut{Status: string(res.Status), ExitCode: res.ExitCode, Signal: res.Signal, Session: session,
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		WallTimeMS: res.WallTimeMS, CPUTimeMS: res.CPUTimeMS, MemoryPeakBytes: res.MemoryPeakBytes, Error: res.Error}
	for _, f := range res.Files {
		out.Files = append(out.Files, server.FileEntry{Path: f.Path, Size: f.Size, Skipped: f.Skipped})
	}
	stdout, stderr := decoded(res.Stdout, res.StdoutEncoding), decoded(res.Stderr, res.StderrEncoding)
	var notes []string
	if res.StdoutTruncated || res.StderrTruncated {
		notes = append(notes, "the sandbox's output limit cut the program's output (it was killed when it passed the limit)")
	}
	if len(stdout)+len(stderr) > m.cfg.MaxReturn {
		// Each stream gets half the cap, or what the other leaves.
		half := m.cfg.MaxReturn / 2
		outCap := max(half, m.cfg.MaxReturn-len(stderr))
		errCap := max(half, m.cfg.MaxReturn-len(stdout))
		note := fmt.Sprintf("output is %d bytes, more than this connection's %d per result: the middle was cut", len(stdout)+len(stderr), m.cfg.MaxReturn)
		if session != "" {
			if saved, err := m.saveOutput(c, session, stdout, stderr); err == nil {
				note += "; the full output is in the session's workspace: " + saved
			} else {
				note += fmt.Sprintf("; saving it in the session failed (%v)", policy.Describe(err).Message)
			}
		} else {
			note += "; it was not kept (run_code has no workspace: use session_run to have the full output saved as a file)"
		}
		notes = append(notes, note)
		if len(stdout) > outCap {
			stdout, out.StdoutTruncated = cut(stdout, outCap), true
		}
		if len(stderr) > errCap {
			stderr, out.StderrTruncated = cut(stderr, errCap), true
		}
	}
	out.Stdout, out.Stderr = textOf(stdout), textOf(stderr)
	out.OutputNote = strings.Join(notes, "; ")
	r := text(runText(&out))
	if res.Status == "setup_error" || res.Status == "error" {
		r.IsError = true
	}
	return r, out, nil
}

// decoded is a captured stream's bytes.
func decoded(s, encoding string) []byte {
	if encoding == "base64" {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b
		}
	}
	return []byte(s)
}

// textOf is b as text: invalid UTF-8 replaced (the saved file, when
// there is one, keeps the bytes).
func textOf(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// cut keeps the start and the end of b, n bytes in all (with the note
// between them), on UTF-8 boundaries.
func cut(b []byte, n int) []byte {
	head, tail := n*2/3, n/3
	for head > 0 && !utf8.RuneStart(b[head]) {
		head--
	}
	t := len(b) - tail
	for t < len(b) && !utf8.RuneStart(b[t]) {
		t++
	}
	mid := fmt.Sprintf("\n[... %d bytes cut ...]\n", t-head)
	return append(append(append([]byte(nil), b[:head]...), mid...), b[t:]...)
}

// saveOutput writes the full streams into the session's workspace and
// returns their paths.
func (m *MCP) saveOutput(c *conn, session string, stdout, stderr []byte) (string, error) {
	c.mu.Lock()
	c.saved++
	n := c.saved
	c.mu.Unlock()
	base := fmt.Sprintf(".airlock/output-%d", n)
	if err := m.srv.WriteSessionFile(session, base+".stdout", stdout); err != nil {
		return "", err
	}
	if err := m.srv.WriteSessionFile(session, base+".stderr", stderr); err != nil {
		return "", err
	}
	return base + ".stdout and " + base + ".stderr (read_file, or cat them in session_run)", nil
}

// runText is a run's readable block.
func runText(o *RunOut) string {
	var b strings.Builder
	switch o.Status {
	case "ok":
		b.WriteString("status: ok (exit code 0)")
	case "exited":
		fmt.Fprintf(&b, "status: exited with code %d", o.ExitCode)
	default:
		fmt.Fprintf(&b, "status: %s (exit code %d", o.Status, o.ExitCode)
		if o.Signal != "" {
			fmt.Fprintf(&b, ", %s", o.Signal)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", %d ms\n", o.WallTimeMS)
	if o.Error != nil {
		fmt.Fprintf(&b, "error: %s\n%s\n", o.Error.Message, retryHint(o.Error))
	}
	if o.Stdout != "" {
		fmt.Fprintf(&b, "--- stdout ---\n%s", o.Stdout)
		if !strings.HasSuffix(o.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if o.Stderr != "" {
		fmt.Fprintf(&b, "--- stderr ---\n%s", o.Stderr)
		if !strings.HasSuffix(o.Stderr, "\n") {
			b.WriteString("\n")
		}
	}
	if o.OutputNote != "" {
		fmt.Fprintf(&b, "note: %s\n", o.OutputNote)
	}
	return b.String()
}

// enforcedSummary is a line about what the host enforces.
func enforcedSummary(h executor.Capabilities) string {
	var parts []string
	if h.Namespaces {
		parts = append(parts, "namespaces (filesystem and network isolation)")
	} else {
		parts = append(parts, "NO namespaces: "+h.NamespacesNote)
	}
	if h.Seccomp {
		parts = append(parts, "seccomp")
	}
	parts = append(parts, "limits by "+h.Limits)
	if h.Landlock > 0 {
		parts = append(parts, fmt.Sprintf("Landlock ABI %d", h.Landlock))
	}
	return strings.Join(parts, ", ")
}

// explainRefusals is middleware for tools/call. A result with isError
// that none of the tools made (the SDK's check of the arguments against
// the tool's input schema: a missing or unknown argument, a wrong type, a
// language not installed) becomes a refusal like any other invalid
// request: airlock's text, saying not to retry as is, and the structured
// error info (class invalid, the field) in the tool's own output shape.
// An unknown tool stays a JSON-RPC error (-32602), as the MCP
// specification has it (2025-06-18 to 2026-07-28: "Unknown tool" is a
// protocol error, input validation errors are tool execution errors),
// with a message that names the tools and says nothing ran.
func (m *MCP) explainRefusals(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" {
			return res, err
		}
		name := ""
		if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok {
			name = p.Name
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams && !slices.Contains(m.tools, name) {
			return res, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"unknown tool %q: airlock has no such tool, nothing ran; its tools are %s (tools/list describes them); do not retry as is: call one of them",
				name, strings.Join(m.tools, ", "))}
		}
		r, ok := res.(*sdk.CallToolResult)
		if !ok || err != nil || !r.IsError || r.StructuredContent != nil || len(r.Content) != 1 {
			return res, err
		}
		t, ok := r.Content[0].(*sdk.TextContent)
		if !ok {
			return res, err
		}
		rerr := schemaError(name, t.Text)
		info := policy.Describe(rerr)
		info.Fix = "give the arguments " + name + "'s inputSchema describes (tools/list)"
		t.Text = refusalText(info)
		switch name {
		case "run_code", "session_run":
			_, out, _ := refusedRun(rerr, nil)
			out.Error = info
			r.StructuredContent = out
		case "session_open", "session_close":
			r.StructuredContent = SessionOut{Error: info}
		case "read_file", "write_file":
			r.StructuredContent = FileOut{Error: info}
		case "list_files":
			r.StructuredContent = ListOut{Files: []server.FileEntry{}, Error: info}
		case "process_start", "process_input", "process_signal":
			r.StructuredContent = ProcessOut{Error: info}
		case "process_output":
			r.StructuredContent = ProcessOutputOut{Error: info}
		case "process_list":
			r.StructuredContent = ProcessListOut{Processes: []ProcessEntry{}, Listening: []int{}, Error: info}
		case "http_request":
			r.StructuredContent = HTTPResponseOut{Error: info}
		}
		return res, err
	}
}

var (
	schemaProperty   = regexp.MustCompile(`/properties/([^/:\s]+)`)
	schemaNamedProps = regexp.MustCompile(`(?:missing|additional) properties:? \["([^"]+)"`)
)

// schemaError is the invalid error of a tool's arguments that failed the
// SDK's input schema check with message msg; its field is the argument
// at fault when the message names one.
func schemaError(tool, msg string) error {
	msg = strings.TrimPrefix(msg, `validating "arguments": `)
	msg = strings.TrimPrefix(msg, "validating root: ")
	field := "arguments"
	if f := schemaNamedProps.FindStringSubmatch(msg); f != nil {
		field = f[1]
	} else if f := schemaProperty.FindStringSubmatch(msg); f != nil {
		field = f[1]
	}
	return policy.Invalid(field, "the arguments do not match %s's input schema: %s", tool, msg)
}

// notFound reports whether err is a missing file.
func notFound(err error) bool { return errors.Is(err, fs.ErrNotExist) }
