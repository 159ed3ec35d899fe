// Package server is airlock serve: the executor's warm pool and sessions
// behind an HTTP API, for callers in any language.
//
// # API
//
// JSON over HTTP/1.1 (api/openapi.yaml documents every route):
//
//   - POST /v1/run and POST /v1/exec run one program, or one piece of code
//     in an installed language, and return the library's Result (the
//     object `airlock run --json` prints); exec also returns the files the
//     program left in /workspace. With "Accept: application/x-ndjson" the
//     output streams as {"stdout": ...} / {"stderr": ...} lines, then one
//     {"result": ...} line. A client that goes away cancels its run.
//   - /v1/sessions: a workspace kept across executions (create, run and
//     exec in it, upload, download, list, delete), closed after an idle
//     timeout; the server holds at most Config.MaxSessions.
//   - GET /v1/capabilities, GET /healthz, GET /metrics (Prometheus).
//   - GET /api/v2/runtimes and POST /api/v2/execute: Piston's routes and
//     shapes, so that Piston clients switch by changing a URL.
//
// # Policy: defaults and ceilings
//
// Config.Policy is the served policy: every request runs under it. A
// request may tighten its limits (timeout, cpu_time, memory, pids, cpus,
// file_size, open_files, max_output, net) and add environment variables;
// a value past the served one is refused (ErrInvalid, naming the field),
// never clamped, and nothing else of the policy can be changed by a
// request. Requests that keep the served jail run in the executor's warm
// pool when it has one (see executor.PoolConfig).
//
// # Errors
//
// Every error response is {"error": policy.ErrorInfo} (class, retryable,
// stage, field, message, fix), with the HTTP status of its class: 400
// invalid (413 for a body past Config.MaxRequest), 422 unsupported, 429
// when the queue is full and 503 when draining or unavailable (both with
// Retry-After), 500 internal. A program's own outcome (exit status,
// timeout, OOM, output limit, seccomp kill) is a Result with status 200.
//
// # Load and shutdown
//
// At most Config.MaxConcurrent sandboxes run at once; Config.MaxQueue
// more requests wait for a slot, and past that a request is refused at
// once with 429. Drain stops new runs, lets running ones finish until its
// context ends, then kills them, and closes every session.
//
// # What it does not do
//
// It authenticates nothing itself: RequireTokens wraps a handler with a
// bearer-token check (airlock serve uses it on TCP), AcceptTokens with an
// optional one (on a unix socket, whose mode is the access control). Each
// request is its tenant's (see LocalTenant): a token's, a unix peer
// uid's (ConnContext), or local; a session is its tenant's alone, and
// Config.TenantMaxSessions and TenantMaxConcurrent cap each tenant. Handler refuses, through
// LoopbackGuard, what a web page could make a browser send to a loopback
// listener without the token: a foreign Host (DNS rebinding), a foreign
// Origin, a POST that is not JSON. It does not rate-limit per client, and
// sessions are not shared between server processes.
package server
