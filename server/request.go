package server

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// Overrides are what a request may change of the served policy: limits,
// each at most the served value, and the network, at most as open as
// the served one. A nil field keeps the served value.
type Overrides struct {
	Timeout   *policy.Duration `json:"timeout,omitempty"`
	CPUTime   *policy.Duration `json:"cpu_time,omitempty"`
	Memory    *policy.Size     `json:"memory,omitempty"`
	Pids      *int             `json:"pids,omitempty"`
	CPUs      *float64         `json:"cpus,omitempty"`
	FileSize  *policy.Size     `json:"file_size,omitempty"`
	OpenFiles *int             `json:"open_files,omitempty"`
	MaxOutput *policy.Size     `json:"max_output,omitempty"`
	Net       *policy.Net      `json:"net,omitempty"`
}

// FileIn is a file written into /workspace before the run.
type FileIn struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	// Encoding of Content: "utf8" (the default), "base64" or "hex".
	Encoding string `json:"encoding,omitempty"`
}

// RunRequest is the body of POST /v1/run (and a session's run).
type RunRequest struct {
	Argv          []string          `json:"argv"`
	Stdin         string            `json:"stdin,omitempty"`
	StdinEncoding string            `json:"stdin_encoding,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Policy        *Overrides        `json:"policy,omitempty"`
}

// ExecRequest is the body of POST /v1/exec (and a session's exec).
type ExecRequest struct {
	Language      string            `json:"language"`
	Code          string            `json:"code"`
	Args          []string          `json:"args,omitempty"`
	Stdin         string            `json:"stdin,omitempty"`
	StdinEncoding string            `json:"stdin_encoding,omitempty"`
	Input         json.RawMessage   `json:"input,omitempty"`
	Files         []FileIn          `json:"files,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Policy        *Overrides        `json:"policy,omitempty"`
}

// decode reads r's JSON body into v, strictly: one object, no unknown
// field, every value of its field's type. Errors name the field.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}

// readBody reads r's body, at most MaxRequest bytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequest))
	if err != nil {
		if isBodyTooLarge(err) {
			return nil, policy.Invalid("body", "larger than the server's --max-request of %d bytes", s.cfg.MaxRequest)
		}
		return nil, policy.Invalid("body", "reading it: %v", err)
	}
	return body, nil
}

func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return policy.Invalid("body", "empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return policy.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}

// jsonError names the field a decoding error is about.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return policy.Invalid("body", "malformed JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return policy.Invalid(field, "must be %s, not a JSON %s", kindOf(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return policy.Invalid("body", "malformed JSON: the document ends early")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		name := strings.Trim(f, `"`)
		if isPolicyField(name) {
			return policy.Invalid(name, "not a field a request may set: the server's policy sets it (a request may set %s in \"policy\")", strings.Join(overrideFields, ", "))
		}
		return policy.Invalid(name, "unknown field")
	}
	// A value's own decoder (a duration, a size) says what is wrong.
	return policy.Invalid("body", "%s", msg)
}

// kindOf names the kind of JSON value a Go type takes.
func kindOf(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[policy.Duration]():
		return "a duration (\"30s\", or a number of seconds)"
	case reflect.TypeFor[policy.Size]():
		return "a size (\"64MiB\", or a number of bytes)"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	case reflect.Map:
		return "an object of strings"
	case reflect.Pointer:
		return kindOf(t.Elem())
	}
	return "an object"
}

var overrideFields = []string{"timeout", "cpu_time", "memory", "pids", "cpus", "file_size", "open_files", "max_output", "net"}

// isPolicyField reports whether name is a policy field a request may not
// set (mounts, workspace, seccomp, ...).
func isPolicyField(name string) bool {
	switch name {
	case "mounts", "workspace", "chdir", "setenv", "env_pass", "backend", "seccomp", "best_effort":
		return true
	}
	return false
}

// decodeContent decodes a file's or stdin's content.
func decodeContent(field, content, encoding string) ([]byte, error) {
	switch encoding {
	case "", "utf8", "utf-8":
		return []byte(content), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, policy.Invalid(field, "not valid base64: %v", err)
		}
		return b, nil
	case "hex":
		b, err := hex.DecodeString(content)
		if err != nil {
			return nil, policy.Invalid(field, "not valid hex: %v", err)
		}
		return b, nil
	}
	return nil, policy.Invalid(field+" encoding", "%q is not one of utf8, base64, hex", encoding)
}

// requestPolicy is the served policy with a request's overrides and
// environment: tightened only, or refused naming the field.
func (s *Server) requestPolicy(o *Overrides, env map[string]string) (policy.Policy, error) {
	p := s.pol
	p.Setenv = maps.Clone(p.Setenv)
	if err := tighten(&p, o); err != nil {
		return p, err
	}
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return p, policy.Invalid("env", "bad variable name %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return p, policy.Invalid("env", "the value of %s holds a NUL byte", k)
		}
		if p.Setenv == nil {
			p.Setenv = map[string]string{}
		}
		p.Setenv[k] = v
	}
	return p, p.Validate()
}

// tighten applies o to p, the served policy (validated), refusing any
// value past the served one.
func tighten(p *policy.Policy, o *Overrides) error {
	if o == nil {
		return nil
	}
	over := func(field string, got, max any) error {
		return policy.Invalid("policy."+field, "%v is above the server's maximum %v (a request may only tighten the served policy)", got, max)
	}
	if o.Timeout != nil {
		switch t := *o.Timeout; {
		case t <= 0:
			return policy.Invalid("policy.timeout", "must be positive")
		case t > p.Timeout:
			return over("timeout", time.Duration(t), time.Duration(p.Timeout))
		}
		p.Timeout = *o.Timeout
	}
	if o.CPUTime != nil {
		switch t := *o.CPUTime; {
		case t <= 0:
			return policy.Invalid("policy.cpu_time", "must be positive")
		case p.CPUTime > 0 && t > p.CPUTime:
			return over("cpu_time", time.Duration(t), time.Duration(p.CPUTime))
		}
		p.CPUTime = *o.CPUTime
	}
	if o.Memory != nil {
		switch m := *o.Memory; {
		case m < 1<<20:
			return policy.Invalid("policy.memory", "%d bytes is below the 1 MiB minimum", m)
		case int64(m) > p.MemoryLimit():
			return over("memory", int64(m), p.MemoryLimit())
		}
		if int64(*o.Memory) < p.MemoryLimit() {
			p.Memory = *o.Memory
		}
	}
	if o.Pids != nil {
		switch n := *o.Pids; {
		case n < 1:
			return policy.Invalid("policy.pids", "must be at least 1")
		case int64(n) > p.PidsLimit():
			return over("pids", n, p.PidsLimit())
		}
		if int64(*o.Pids) < p.PidsLimit() {
			p.Pids = *o.Pids
		}
	}
	if o.CPUs != nil {
		switch c := *o.CPUs; {
		case !(c > 0) || c > 1e6:
			return policy.Invalid("policy.cpus", "must be a positive number of cores")
		case p.CPUs > 0 && c > p.CPUs:
			return over("cpus", c, p.CPUs)
		}
		p.CPUs = *o.CPUs
	}
	if o.FileSize != nil {
		switch n := *o.FileSize; {
		case n <= 0:
			return policy.Invalid("policy.file_size", "must be positive")
		case n > p.FileSize:
			return over("file_size", int64(n), int64(p.FileSize))
		}
		p.FileSize = *o.FileSize
	}
	if o.OpenFiles != nil {
		switch n := *o.OpenFiles; {
		case n < 16:
			return policy.Invalid("policy.open_files", "must be at least 16")
		case n > p.OpenFiles:
			return over("open_files", n, p.OpenFiles)
		}
		p.OpenFiles = *o.OpenFiles
	}
	if o.MaxOutput != nil {
		switch n := *o.MaxOutput; {
		case n <= 0:
			return policy.Invalid("policy.max_output", "must be positive")
		case n > p.MaxOutput:
			return over("max_output", int64(n), int64(p.MaxOutput))
		}
		p.MaxOutput = *o.MaxOutput
	}
	if o.Net != nil {
		n := *o.Net
		switch n {
		case policy.NetNone, policy.NetLoopback:
			// Never more open than any served mode; the served allow-list
			// goes with the served net allow.
			p.Egress = policy.Egress{}
		case policy.NetHost:
			if p.Network() != policy.NetHost {
				return over("net", "host", p.Network())
			}
		default:
			return policy.Invalid("policy.net", "%q is not one of none, loopback, host", n)
		}
		p.Net = n
	}
	return nil
}

// runToRequest turns a run body into an executor request.
func (s *Server) runToRequest(b *RunRequest, session bool) (executor.Request, error) {
	var req executor.Request
	if len(b.Argv) == 0 || b.Argv[0] == "" {
		return req, policy.Invalid("argv", "required: the program and its arguments")
	}
	for i, a := range b.Argv {
		if strings.ContainsRune(a, 0) {
			return req, policy.Invalid("argv", "argv[%d] holds a NUL byte", i)
		}
	}
	stdin, err := decodeContent("stdin", b.Stdin, b.StdinEncoding)
	if err != nil {
		return req, err
	}
	req.Args, req.Stdin = b.Argv, bytes.NewReader(stdin)
	if session {
		if b.Policy != nil || b.Env != nil {
			return req, policy.Invalid("policy", "a session's policy and environment are set when it is created")
		}
		return req, nil
	}
	req.Policy, err = s.requestPolicy(b.Policy, b.Env)
	return req, err
}

// execToRequest turns an exec body into an executor request.
func (s *Server) execToRequest(b *ExecRequest, session bool) (executor.Request, error) {
	var req executor.Request
	if b.Language == "" {
		return req, policy.Invalid("language", "required: one of %v", s.languageNames())
	}
	if _, err := s.ex.Language(b.Language); err != nil {
		return req, err
	}
	for i, a := range b.Args {
		if strings.ContainsRune(a, 0) {
			return req, policy.Invalid("args", "args[%d] holds a NUL byte", i)
		}
	}
	stdin, err := decodeContent("stdin", b.Stdin, b.StdinEncoding)
	if err != nil {
		return req, err
	}
	if len(b.Input) > 0 && !json.Valid(b.Input) {
		return req, policy.Invalid("input", "not valid JSON")
	}
	req = executor.Request{Language: b.Language, Code: b.Code, Argv: b.Args, Input: b.Input, Stdin: bytes.NewReader(stdin), CollectFiles: true}
	if len(b.Files) > 0 {
		req.Files = map[string][]byte{}
		for i, f := range b.Files {
			field := fmt.Sprintf("files[%d]", i)
			if n := f.Name; n == "" || path.IsAbs(n) || path.Clean(n) != n || n == "." || n == ".." || strings.HasPrefix(n, "../") || strings.ContainsRune(n, 0) {
				return req, policy.Invalid("file name", "%s.name %q must be a clean path relative to /workspace", field, n)
			}
			if _, dup := req.Files[f.Name]; dup {
				return req, policy.Invalid(field+".name", "%q given twice", f.Name)
			}
			data, err := decodeContent(field+".content", f.Content, f.Encoding)
			if err != nil {
				return req, err
			}
			req.Files[f.Name] = data
		}
	}
	if session {
		if b.Policy != nil || b.Env != nil {
			return req, policy.Invalid("policy", "a session's policy and environment are set when it is created")
		}
		return req, nil
	}
	req.Policy, err = s.requestPolicy(b.Policy, b.Env)
	return req, err
}
