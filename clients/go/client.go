// Package client is the Go client of airlock serve, shaped like the
// executor package: Execute takes an executor.Request and returns an
// executor.Result, over a unix socket or TCP.
//
//	c, err := client.New("unix:/run/airlock.sock", "")
//	res, err := c.Execute(ctx, executor.Request{Language: "python", Code: "print(42)"})
//
// # What crosses the wire
//
// A request's Policy travels as overrides of the served policy: its
// limits (Timeout, CPUTime, Memory, Pids, CPUs, FileSize, OpenFiles,
// MaxOutput) and Net, when set, and Setenv as the environment; the
// server refuses any past its own (ErrInvalid). Any other policy field
// (mounts, workspace, seccomp, backend, ...) is the server's to choose:
// Execute refuses it before sending. Stdin is read whole before the
// request is sent. With Stdout or Stderr set, the output streams into
// them as the program writes it.
//
// # Errors
//
// An error response is an *Error, which matches policy.ErrInvalid,
// ErrUnsupported or ErrUnavailable with errors.Is by its class, and says
// whether a retry can help (Retryable). A transport failure is returned
// as it is: whether the run happened is then unknown.
package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// Client talks to one airlock serve. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	// dial opens a raw connection to the server (a pty, a TCP tunnel).
	dial func(ctx context.Context) (net.Conn, error)
}

// New returns a client for addr: "unix:/path/to/airlock.sock", or an
// http:// or https:// URL. token, if set, is sent as a bearer token.
func New(addr, token string) (*Client, error) {
	c := &Client{token: token}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, policy.Invalid("addr", "unix: needs a socket path")
		}
		tr := &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
			MaxIdleConnsPerHost: 64,
		}
		c.base, c.hc = "http://airlock", &http.Client{Transport: tr}
		c.dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		return c, nil
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, policy.Invalid("addr", "%q: want unix:PATH or an http(s) URL", addr)
	}
	c.base = strings.TrimSuffix(addr, "/")
	c.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	c.dial = func(ctx context.Context) (net.Conn, error) {
		if u.Scheme == "https" {
			d := tls.Dialer{Config: &tls.Config{ServerName: u.Hostname()}}
			return d.DialContext(ctx, "tcp", host)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", host)
	}
	return c, nil
}

// Close closes idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Error is an error response of the server.
type Error struct {
	// Status is the HTTP status.
	Status int
	policy.ErrorInfo
	// Result is the library's result when the server returned one with
	// the error (a setup failure).
	Result *executor.Result
}

func (e *Error) Error() string {
	return fmt.Sprintf("airlock serve: %d %s: %s", e.Status, e.Class, e.Message)
}

// Is matches the class: policy.ErrInvalid, ErrUnsupported, ErrUnavailable.
func (e *Error) Is(target error) bool {
	switch target {
	case policy.ErrInvalid:
		return e.Class == policy.ClassInvalid
	case policy.ErrUnsupported:
		return e.Class == policy.ClassUnsupported
	case policy.ErrUnavailable:
		return e.Class == policy.ClassUnavailable
	}
	return false
}

// overrides is the wire form of a request's policy.
type overrides struct {
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

// toOverrides turns p into overrides, refusing what a request cannot set.
func toOverrides(p policy.Policy) (*overrides, error) {
	o := &overrides{}
	set := false
	if p.Timeout != 0 {
		o.Timeout, set = &p.Timeout, true
	}
	if p.CPUTime != 0 {
		o.CPUTime, set = &p.CPUTime, true
	}
	if p.Memory != 0 {
		o.Memory, set = &p.Memory, true
	}
	if p.Pids != 0 {
		o.Pids, set = &p.Pids, true
	}
	if p.CPUs != 0 {
		o.CPUs, set = &p.CPUs, true
	}
	if p.FileSize != 0 {
		o.FileSize, set = &p.FileSize, true
	}
	if p.OpenFiles != 0 {
		o.OpenFiles, set = &p.OpenFiles, true
	}
	if p.MaxOutput != 0 {
		o.MaxOutput, set = &p.MaxOutput, true
	}
	if p.Net != "" {
		o.Net, set = &p.Net, true
	}
	rest := p
	rest.Timeout, rest.CPUTime, rest.Memory, rest.Pids, rest.CPUs = 0, 0, 0, 0, 0
	rest.FileSize, rest.OpenFiles, rest.MaxOutput, rest.Net, rest.Setenv = 0, 0, 0, "", nil
	if !reflect.ValueOf(rest).IsZero() {
		return nil, policy.Invalid("policy", "only limits, net and setenv can be sent to airlock serve; the server's policy sets the rest")
	}
	if !set {
		return nil, nil
	}
	return o, nil
}

type fileIn struct {
	Name     string `json:"name"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

// body is the JSON of a run or exec request.
func body(req executor.Request, session bool) (string, map[string]any, error) {
	m := map[string]any{}
	if req.Stdin != nil {
		b, err := io.ReadAll(req.Stdin)
		if err != nil {
			return "", nil, fmt.Errorf("reading stdin: %w", err)
		}
		m["stdin"], m["stdin_encoding"] = base64.StdEncoding.EncodeToString(b), "base64"
	}
	if !session {
		o, err := toOverrides(req.Policy)
		if err != nil {
			return "", nil, err
		}
		if o != nil {
			m["policy"] = o
		}
		if len(req.Policy.Setenv) > 0 {
			m["env"] = req.Policy.Setenv
		}
	} else if !reflect.ValueOf(req.Policy).IsZero() {
		return "", nil, policy.Invalid("policy", "a session's policy is set when it is made")
	}
	if req.Language == "" {
		if len(req.Files) > 0 || len(req.Input) > 0 || req.CollectFiles {
			return "", nil, policy.Invalid("files", "files, input and collected files go with Language (exec)")
		}
		m["argv"] = req.Args
		return "run", m, nil
	}
	if len(req.Args) > 0 {
		return "", nil, policy.Invalid("request", "give Args, or Language and Code, not both")
	}
	m["language"], m["code"] = req.Language, req.Code
	if len(req.Argv) > 0 {
		m["args"] = req.Argv
	}
	if len(req.Input) > 0 {
		m["input"] = req.Input
	}
	var files []fileIn
	for name, data := range req.Files {
		files = append(files, fileIn{Name: name, Content: base64.StdEncoding.EncodeToString(data), Encoding: "base64"})
	}
	if files != nil {
		m["files"] = files
	}
	return "exec", m, nil
}

// Execute runs req on the server, like executor.Execute: program
// outcomes are Results, an error means there is none.
func (c *Client) Execute(ctx context.Context, req executor.Request) (*executor.Result, error) {
	return c.execute(ctx, "/v1", req, false)
}

func (c *Client) execute(ctx context.Context, prefix string, req executor.Request, session bool) (*executor.Result, error) {
	kind, m, err := body(req, session)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	hr, err := c.request(ctx, http.MethodPost, prefix+"/"+kind, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	stream := req.Stdout != nil || req.Stderr != nil
	if stream {
		hr.Header.Set("Accept", "application/x-ndjson")
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if stream && resp.StatusCode == http.StatusOK {
		return readStream(resp.Body, req.Stdout, req.Stderr)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp)
	}
	var res executor.Result
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("airlock serve: decoding the result: %w", err)
	}
	return &res, nil
}

// readStream copies NDJSON chunks to their writers and returns the last
// line's result (or its error).
func readStream(r io.Reader, stdout, stderr io.Writer) (*executor.Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var line struct {
			Stdout   *string           `json:"stdout"`
			Stderr   *string           `json:"stderr"`
			Encoding string            `json:"encoding"`
			Result   *executor.Result  `json:"result"`
			Error    *policy.ErrorInfo `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("airlock serve: a stream line: %w", err)
		}
		write := func(w io.Writer, s string) error {
			if w == nil {
				return nil
			}
			b := []byte(s)
			if line.Encoding == "base64" {
				var err error
				if b, err = base64.StdEncoding.DecodeString(s); err != nil {
					return err
				}
			}
			_, err := w.Write(b)
			return err
		}
		switch {
		case line.Stdout != nil:
			if err := write(stdout, *line.Stdout); err != nil {
				return nil, err
			}
		case line.Stderr != nil:
			if err := write(stderr, *line.Stderr); err != nil {
				return nil, err
			}
		case line.Error != nil:
			return nil, &Error{Status: http.StatusOK, ErrorInfo: *line.Error, Result: line.Result}
		case line.Result != nil:
			return line.Result, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("airlock serve: the stream ended without a result")
}

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	return hr, nil
}

// readError decodes an error response.
func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Error  *policy.ErrorInfo `json:"error"`
		Result *executor.Result  `json:"result"`
	}
	if json.Unmarshal(b, &eb) != nil || eb.Error == nil {
		return &Error{Status: resp.StatusCode, ErrorInfo: policy.ErrorInfo{Class: policy.ClassInternal, Message: strings.TrimSpace(string(b))}}
	}
	return &Error{Status: resp.StatusCode, ErrorInfo: *eb.Error, Result: eb.Result}
}

// do sends a request without a run and decodes a JSON answer into out
// (nil: none expected).
func (c *Client) do(ctx context.Context, method, path string, in []byte, out any) error {
	var body io.Reader
	if in != nil {
		body = bytes.NewReader(in)
	}
	hr, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	if method == http.MethodPost {
		// A POST's body is JSON, and says so: a server on TCP loopback
		// without a token refuses any other (docs/serve.md).
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readError(resp)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw, err = io.ReadAll(resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Capabilities returns GET /v1/capabilities, decoded as JSON objects.
func (c *Client) Capabilities(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	return out, c.do(ctx, http.MethodGet, "/v1/capabilities", nil, &out)
}

// SessionConfig configures a server session.
type SessionConfig struct {
	// Policy: limits, net and setenv, as for Execute.
	Policy policy.Policy
	// IdleTimeout closes the session after that long without a request.
	// 0 = the server's default.
	IdleTimeout policy.Duration
}

// Session is a server session: a workspace kept across executions.
type Session struct {
	c  *Client
	ID string
}

// NewSession opens a session.
func (c *Client) NewSession(ctx context.Context, cfg SessionConfig) (*Session, error) {
	o, err := toOverrides(cfg.Policy)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if o != nil {
		m["policy"] = o
	}
	if len(cfg.Policy.Setenv) > 0 {
		m["env"] = cfg.Policy.Setenv
	}
	if cfg.IdleTimeout != 0 {
		m["idle_timeout"] = cfg.IdleTimeout
	}
	data, _ := json.Marshal(m)
	var info struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/sessions", data, &info); err != nil {
		return nil, err
	}
	return &Session{c: c, ID: info.ID}, nil
}

func (s *Session) path(rest string) string { return "/v1/sessions/" + url.PathEscape(s.ID) + rest }

// Execute runs req in the session (req.Policy must be the zero value).
func (s *Session) Execute(ctx context.Context, req executor.Request) (*executor.Result, error) {
	return s.c.execute(ctx, s.path(""), req, true)
}

// WriteFile writes name (relative to /workspace) in the session.
func (s *Session) WriteFile(ctx context.Context, name string, data []byte) error {
	return s.c.do(ctx, http.MethodPut, s.path("/files/"+escapePath(name)), data, nil)
}

// ReadFile reads name (relative to /workspace) from the session.
func (s *Session) ReadFile(ctx context.Context, name string) ([]byte, error) {
	var out []byte
	return out, s.c.do(ctx, http.MethodGet, s.path("/files/"+escapePath(name)), nil, &out)
}

// FileEntry is one file of a session's listing.
type FileEntry struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Skipped string `json:"skipped,omitempty"`
}

// Files lists the session's workspace.
func (s *Session) Files(ctx context.Context) ([]FileEntry, error) {
	var out []FileEntry
	return out, s.c.do(ctx, http.MethodGet, s.path("/files"), nil, &out)
}

// Close ends the session and removes its workspace.
func (s *Session) Close(ctx context.Context) error {
	return s.c.do(ctx, http.MethodDelete, s.path(""), nil, nil)
}

func escapePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
