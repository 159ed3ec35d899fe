package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// Piston's API (engineer-man/piston, api/src/api/v2.js): the routes and
// shapes its clients use, served by the executor. Differences: there is
// no compile stage (every language here is interpreted; compile_* limits
// are checked for type and ignored); "output" is stdout then stderr, not
// their interleaving; a request body is read as JSON whatever its
// Content-Type says (the npm piston-client sends text/plain), once
// LoopbackGuard let it through (over loopback without the token it takes
// only application/json).

// pistonRuntime is one element of GET /api/v2/runtimes.
type pistonRuntime struct {
	Language string   `json:"language"`
	Version  string   `json:"version"`
	Aliases  []string `json:"aliases"`
	Runtime  string   `json:"runtime,omitempty"`
	name     string   // the executor's name for it
}

// pistonNames maps a canonical name to Piston's language and runtime
// where they differ.
var pistonNames = map[string][2]string{"node": {"javascript", "node"}}

func (s *Server) pistonRuntimes() []pistonRuntime {
	out := []pistonRuntime{}
	for _, l := range s.langs() {
		rt := pistonRuntime{Language: l.Name, Version: l.Version, Aliases: slices.Clone(l.Aliases), name: l.Name}
		if rt.Aliases == nil {
			rt.Aliases = []string{}
		}
		if n, ok := pistonNames[l.Name]; ok {
			rt.Language, rt.Runtime = n[0], n[1]
			rt.Aliases = slices.DeleteFunc(rt.Aliases, func(a string) bool { return a == n[0] })
			rt.Aliases = append(rt.Aliases, l.Name)
		}
		out = append(out, rt)
	}
	return out
}

func (s *Server) handlePistonRuntimes(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.pistonRuntimes())
}

// pistonFind returns the runtime for a language name or alias and a
// version: "", "*" or "x" for any, else the version itself or a prefix
// of it ending at a dot ("3", "3.11").
func (s *Server) pistonFind(lang, version string) (pistonRuntime, bool) {
	for _, rt := range s.pistonRuntimes() {
		if rt.Language != lang && !slices.Contains(rt.Aliases, lang) {
			continue
		}
		switch {
		case version == "" || version == "*" || version == "x" || version == rt.Version,
			strings.HasPrefix(rt.Version, version+"."):
			return rt, true
		}
	}
	return pistonRuntime{}, false
}

// pistonFail answers a Piston request's error: Piston's {message}, with
// airlock's class, retryable, field and fix beside it.
func (s *Server) pistonFail(w http.ResponseWriter, status int, err error) {
	info := policy.Describe(err)
	if status == 0 {
		status = statusOf(info)
	}
	if info.Retryable {
		w.Header().Set("Retry-After", "1")
	}
	s.countError(info, false)
	writeJSON(w, status, info)
}

type pistonFile struct {
	Name     string `json:"name"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

// pistonRequest reads and checks a Piston execute body, in Piston's
// order and words.
func (s *Server) pistonRequest(body []byte) (executor.Request, pistonRuntime, error) {
	var req executor.Request
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return req, pistonRuntime{}, policy.Invalid("body", "a JSON object is required")
	}
	str := func(name string, required bool) (string, error) {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			if required {
				return "", policy.Invalid(name, "%s is required as a string", name)
			}
			return "", nil
		}
		var out string
		if json.Unmarshal(v, &out) != nil || (required && out == "") {
			return "", policy.Invalid(name, "%s is required as a string", name)
		}
		return out, nil
	}
	lang, err := str("language", true)
	if err != nil {
		return req, pistonRuntime{}, err
	}
	version, err := str("version", false)
	if err != nil {
		return req, pistonRuntime{}, err
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw["files"], &list) != nil || list == nil {
		return req, pistonRuntime{}, policy.Invalid("files", "files is required as an array")
	}
	files := make([]pistonFile, len(list))
	for i, f := range list {
		if json.Unmarshal(f["content"], &files[i].Content) != nil {
			return req, pistonRuntime{}, policy.Invalid(fmt.Sprintf("files[%d].content", i), "files[%d].content is required as a string", i)
		}
		for _, k := range []struct {
			name string
			dst  *string
		}{{"name", &files[i].Name}, {"encoding", &files[i].Encoding}} {
			if v, ok := f[k.name]; ok && string(v) != "null" && json.Unmarshal(v, k.dst) != nil {
				return req, pistonRuntime{}, policy.Invalid(fmt.Sprintf("files[%d].%s", i, k.name), "files[%d].%s must be a string", i, k.name)
			}
		}
	}
	rt, ok := s.pistonFind(lang, version)
	if !ok {
		return req, pistonRuntime{}, policy.Invalid("language", "%s-%s runtime is unknown", lang, version)
	}
	code := -1
	for i, f := range files {
		if f.Encoding == "" || f.Encoding == "utf8" {
			code = i
			break
		}
	}
	if code < 0 {
		return req, rt, policy.Invalid("files", "files must include at least one utf8 encoded file")
	}
	var o Overrides
	num := func(name string) (float64, bool, error) {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			return 0, false, nil
		}
		var n float64
		if json.Unmarshal(v, &n) != nil {
			return 0, false, policy.Invalid(name, "If specified, %s must be a number", name)
		}
		return n, n != 0, nil
	}
	for _, name := range []string{"compile_timeout", "compile_cpu_time", "compile_memory_limit"} {
		if _, _, err := num(name); err != nil {
			return req, rt, err
		}
	}
	p := s.pol
	limit := func(name string, n, max float64) error {
		switch {
		case n < 0:
			return policy.Invalid(name, "%s must be non-negative", name)
		case max > 0 && n > max:
			return policy.Invalid(name, "%s cannot exceed the configured limit of %v", name, max)
		}
		return nil
	}
	if n, set, err := num("run_timeout"); err != nil {
		return req, rt, err
	} else if set {
		if err := limit("run_timeout", n, float64(time.Duration(p.Timeout).Milliseconds())); err != nil {
			return req, rt, err
		}
		d := policy.Duration(time.Duration(n * float64(time.Millisecond)))
		o.Timeout = &d
	}
	if n, set, err := num("run_cpu_time"); err != nil {
		return req, rt, err
	} else if set {
		if err := limit("run_cpu_time", n, float64(time.Duration(p.CPUTime).Milliseconds())); err != nil {
			return req, rt, err
		}
		d := policy.Duration(time.Duration(n * float64(time.Millisecond)))
		o.CPUTime = &d
	}
	// -1 is Piston's "no limit of the request's own": the served one.
	if n, set, err := num("run_memory_limit"); err != nil {
		return req, rt, err
	} else if set && n != -1 {
		if err := limit("run_memory_limit", n, float64(p.MemoryLimit())); err != nil {
			return req, rt, err
		}
		m := policy.Size(n)
		o.Memory = &m
	}
	stdin, err := str("stdin", false)
	if err != nil {
		return req, rt, policy.Invalid("stdin", "stdin must be a string")
	}
	var args []string
	if v, ok := raw["args"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &args) != nil {
			return req, rt, policy.Invalid("args", "args must be an array of strings")
		}
	}
	req = executor.Request{Language: rt.name, Code: files[code].Content, Argv: args, Stdin: strings.NewReader(stdin)}
	for i, f := range files {
		if i == code {
			continue
		}
		name := f.Name
		if name == "" {
			name = fmt.Sprintf("file%d.code", i)
		}
		data, err := decodeContent(fmt.Sprintf("files[%d].content", i), f.Content, f.Encoding)
		if err != nil {
			return req, rt, err
		}
		if req.Files == nil {
			req.Files = map[string][]byte{}
		}
		req.Files[name] = data
	}
	req.Policy, err = s.requestPolicy(&o, nil)
	return req, rt, err
}

// pistonRun is Piston's run object.
type pistonRun struct {
	Stdout   string  `json:"stdout"`
	Stderr   string  `json:"stderr"`
	Output   string  `json:"output"`
	Code     *int    `json:"code"`
	Signal   *string `json:"signal"`
	Message  *string `json:"message"`
	Status   *string `json:"status"`
	Memory   *int64  `json:"memory"`
	CPUTime  *int64  `json:"cpu_time"`
	WallTime *int64  `json:"wall_time"`
}

// pistonResult maps the library's Result to Piston's run object and its
// status codes: RE (non-zero exit), SG (a signal), TO (time), OL/EL
// (stdout/stderr past the cap), XX (internal).
func pistonResult(res *executor.Result) pistonRun {
	ptr := func(s string) *string { return &s }
	run := pistonRun{Stdout: res.Stdout, Stderr: res.Stderr, Output: res.Stdout + res.Stderr,
		Memory: &res.MemoryPeakBytes, CPUTime: &res.CPUTimeMS, WallTime: &res.WallTimeMS}
	code := res.ExitCode
	sig := func() {
		if res.Signal != "" {
			run.Signal = ptr(res.Signal)
		} else {
			run.Signal = ptr("SIGKILL")
		}
	}
	switch res.Status {
	case nsjail.StatusOK:
		run.Code = &code
	case nsjail.StatusExited:
		run.Code, run.Status, run.Message = &code, ptr("RE"), ptr(fmt.Sprintf("Exited with error status %d", code))
	case nsjail.StatusTimeout, nsjail.StatusCPULimit:
		sig()
		run.Status, run.Message = ptr("TO"), ptr("Time limit exceeded")
	case nsjail.StatusOutputLimit:
		sig()
		run.Status, run.Message = ptr("OL"), ptr("stdout length exceeded")
		if res.StderrTruncated && !res.StdoutTruncated {
			run.Status, run.Message = ptr("EL"), ptr("stderr length exceeded")
		}
	case nsjail.StatusSignaled, nsjail.StatusMemoryLimit, nsjail.StatusSeccompViolation, nsjail.StatusCancelled:
		sig()
		n := int(unix.SignalNum(*run.Signal))
		run.Status, run.Message = ptr("SG"), ptr(fmt.Sprintf("Caught fatal signal %d", n))
		if res.Status == nsjail.StatusMemoryLimit {
			run.Message = ptr("Memory limit exceeded")
		}
	default:
		run.Status, run.Message = ptr("XX"), ptr(string(res.Status))
	}
	return run
}

func (s *Server) handlePistonExecute(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		status := 0
		if strings.HasPrefix(err.Error(), "invalid body: larger than") {
			status = http.StatusRequestEntityTooLarge
		}
		s.pistonFail(w, status, err)
		return
	}
	req, rt, err := s.pistonRequest(bytes.TrimSpace(body))
	if err != nil {
		s.pistonFail(w, 0, err)
		return
	}
	release, status, err := s.admit(r.Context())
	if err != nil {
		if status != statusClientGone {
			s.pistonFail(w, status, err)
		}
		return
	}
	defer release()
	ctx, cancel := s.runContext(r)
	defer cancel()
	start := time.Now()
	res, err := s.ex.Execute(ctx, req)
	err = s.killedByDrain(err)
	s.m.observe("piston", res, err, time.Since(start))
	if err != nil {
		s.pistonFail(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"language": rt.Language, "version": rt.Version, "run": pistonResult(res)})
}
