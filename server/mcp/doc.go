// Package mcp is airlock mcp: the executor of airlock serve (the same
// server.Server, with its warm pool, run slots, queue, sessions and
// served policy) behind the Model Context Protocol, so that any agent
// can run code and shell commands in airlock. It is built on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk); New returns
// an MCP whose Server runs over stdio or any SDK transport, and whose
// Handler serves streamable HTTP.
//
// # Tools
//
//   - run_code: language, code, stdin, args, timeout, files; one fresh
//     sandbox.
//   - session_open, session_run (a shell command, or code in a
//     language; a timeout), session_close: a live sandbox
//     (server.SessionSandbox) whose workspace and background processes
//     last across calls until it closes.
//   - process_start, process_output, process_input, process_signal,
//     process_list: background processes of a session (output read
//     from where the last read stopped, or from an offset).
//   - http_request: an HTTP request to a port of a session's sandbox,
//     through executor.Sandbox.Dial only.
//
// language is an enum of every name the REST routes take, aliases
// included (server.Languages). run_code is one-shot: its sandbox ends
// with the call, as its description says.
//   - read_file, write_file, list_files: a session's workspace, without
//     running anything (paths are relative to /workspace; nothing
//     outside it is reachable: no "..", no absolute path, no link).
//   - capabilities: languages, the served limits, the connection's
//     limits and what this host enforces.
//
// Each tool has an input and an output schema; a call's result carries
// the structured output and a readable text block. Annotations are
// true to each tool: read_file, list_files, process_output,
// process_list and capabilities are read-only; a run never is;
// openWorldHint (and, for run_code, destructiveHint) is set only when
// the served policy lets programs reach a network beyond the sandbox.
//
// A session's files are also resources, airlock://session/{id}/{path}
// (a resource template), readable by the connection that opened it.
//
// # Outcomes and errors
//
// A program's own outcome (exit status, signal, timeout, OOM, output
// limit, seccomp kill) is a normal result, never isError. A refusal (a
// bad request, a limit, a host that cannot enforce the policy, a busy
// server) is a result with isError, whose text says whether a retry can
// help and whose structured output holds the policy.ErrorInfo (class,
// retryable, field, message, fix). Arguments that fail a tool's input
// schema are refused the same way (class invalid, the argument as
// field). Protocol errors are left to the SDK (a malformed request), and
// an unknown tool stays one, -32602 as the MCP specification has it,
// with a message naming the tools.
//
// # Progress and cancellation
//
// A call that carries a progress token gets a progress notification
// every Config.ProgressEvery while its sandbox runs. A cancelled call
// (notifications/cancelled), or the end of the client's connection (the
// stdio stream closing, the HTTP session deleted or timing out), kills
// its sandbox at once.
//
// # Per-connection limits
//
// Each client connection (an MCP session) may have at most
// Config.MaxRuns runs going and Config.MaxSessions sessions open, and
// sees only its own sessions. Output in one result is capped at
// Config.MaxReturn bytes: past it the middle is cut with a note, and in
// a session the full output is saved as a file of its workspace. The
// server's own limits (server.Config) apply on top.
//
// # What it does not do
//
// It authenticates nothing: over HTTP, wrap Handler (airlock mcp uses
// server.RequireToken on TCP). It never logs payload data. Over
// streamable HTTP with protocol versions before 2026-07-28 the SDK does
// not tie a call to its HTTP request, so a client that drops its TCP
// connection without cancelling or deleting its session keeps its runs
// until they end or the session's idle timeout closes it.
package mcp
