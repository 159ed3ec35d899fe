package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/net/websocket"
)

// Live sandboxes (docs/sandboxes.md): a sandbox made on the server that
// keeps its processes, files and ports across calls until it is
// deleted, idles out or reaches its lifetime.

// SandboxConfig configures CreateSandbox.
type SandboxConfig struct {
	// Policy: limits, net and setenv, as for Execute.
	Policy policy.Policy
	// Files are written into /workspace before it is returned.
	Files map[string][]byte
	// IdleTimeout closes it after that long with no call on it; Timeout
	// is its lifetime. 0 = the server's defaults.
	IdleTimeout, Timeout time.Duration
	// Metadata is opaque to airlock, returned in its SandboxInfo.
	Metadata map[string]string
}

// SandboxInfo describes a sandbox.
type SandboxInfo struct {
	executor.SandboxInfo
	Tenant string        `json:"tenant"`
	Policy policy.Policy `json:"policy"`
}

// Sandbox is a handle on a live sandbox of the server.
type Sandbox struct {
	c  *Client
	ID string
}

// CreateSandbox makes a sandbox.
func (c *Client) CreateSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, *SandboxInfo, error) {
	o, err := toOverrides(cfg.Policy)
	if err != nil {
		return nil, nil, err
	}
	m := map[string]any{}
	if o != nil {
		m["policy"] = o
	}
	if len(cfg.Policy.Setenv) > 0 {
		m["env"] = cfg.Policy.Setenv
	}
	if cfg.IdleTimeout != 0 {
		m["idle_timeout"] = policy.Duration(cfg.IdleTimeout)
	}
	if cfg.Timeout != 0 {
		m["timeout"] = policy.Duration(cfg.Timeout)
	}
	if len(cfg.Metadata) > 0 {
		m["metadata"] = cfg.Metadata
	}
	var files []fileIn
	for name, data := range cfg.Files {
		files = append(files, fileIn{Name: name, Content: base64.StdEncoding.EncodeToString(data), Encoding: "base64"})
	}
	if files != nil {
		m["files"] = files
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	var info SandboxInfo
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes", data, &info); err != nil {
		return nil, nil, err
	}
	return &Sandbox{c: c, ID: info.ID}, &info, nil
}

// Sandboxes lists the open sandboxes of this client's credential.
func (c *Client) Sandboxes(ctx context.Context) ([]SandboxInfo, error) {
	var out []SandboxInfo
	return out, c.do(ctx, http.MethodGet, "/v1/sandboxes", nil, &out)
}

// Sandbox returns a handle on sandbox id (no request is made).
func (c *Client) Sandbox(id string) *Sandbox { return &Sandbox{c: c, ID: id} }

// DeleteSandbox kills everything in sandbox id and removes it.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.Sandbox(id).Delete(ctx)
}

func (s *Sandbox) path(rest string) string { return "/v1/sandboxes/" + url.PathEscape(s.ID) + rest }

// Info describes the sandbox.
func (s *Sandbox) Info(ctx context.Context) (*SandboxInfo, error) {
	var info SandboxInfo
	return &info, s.c.do(ctx, http.MethodGet, s.path(""), nil, &info)
}

// Delete kills everything in the sandbox and removes it.
func (s *Sandbox) Delete(ctx context.Context) error {
	return s.c.do(ctx, http.MethodDelete, s.path(""), nil, nil)
}

// SetTimeout sets the sandbox's lifetime to d from now.
func (s *Sandbox) SetTimeout(ctx context.Context, d time.Duration) (*SandboxInfo, error) {
	data, _ := json.Marshal(map[string]any{"timeout": policy.Duration(d)})
	var info SandboxInfo
	return &info, s.c.do(ctx, http.MethodPost, s.path("/timeout"), data, &info)
}

// ProcessSpec is a process to start in a sandbox: exactly one of Argv,
// Command (a /bin/sh -c line), or Language with Code (Argv then its
// arguments).
type ProcessSpec struct {
	Argv     []string          `json:"argv,omitempty"`
	Command  string            `json:"command,omitempty"`
	Language string            `json:"language,omitempty"`
	Code     string            `json:"code,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	// Stdin is given at once; StdinOpen keeps it open for Stdin calls
	// (background only).
	Stdin     []byte `json:"-"`
	StdinOpen bool   `json:"stdin_open,omitempty"`
	// PTY runs it on a terminal (background only; attach with PTY).
	PTY *TTYSize `json:"pty,omitempty"`
	// Timeout kills it after that long (0: the policy's timeout in the
	// foreground, none in the background).
	Timeout time.Duration `json:"-"`
	Tag     string        `json:"tag,omitempty"`
}

// TTYSize is a terminal's size.
type TTYSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

func (p ProcessSpec) body(background bool) ([]byte, error) {
	type wire ProcessSpec
	m := struct {
		wire
		Stdin         string           `json:"stdin,omitempty"`
		StdinEncoding string           `json:"stdin_encoding,omitempty"`
		Timeout       *policy.Duration `json:"timeout,omitempty"`
		Background    bool             `json:"background,omitempty"`
	}{wire: wire(p), Background: background}
	if len(p.Stdin) > 0 {
		m.Stdin, m.StdinEncoding = base64.StdEncoding.EncodeToString(p.Stdin), "base64"
	}
	if p.Timeout != 0 {
		d := policy.Duration(p.Timeout)
		m.Timeout = &d
	}
	return json.Marshal(m)
}

// Exec runs a process in the foreground and returns its result. With
// stdout or stderr set, its output streams into them as it comes (and
// the result holds none of it).
func (s *Sandbox) Exec(ctx context.Context, p ProcessSpec, stdout, stderr io.Writer) (*executor.ProcessResult, error) {
	data, err := p.body(false)
	if err != nil {
		return nil, err
	}
	hr, err := s.c.request(ctx, http.MethodPost, s.path("/processes"), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	stream := stdout != nil || stderr != nil
	if stream {
		hr.Header.Set("Accept", "application/x-ndjson")
	}
	resp, err := s.c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp)
	}
	if stream {
		return readProcessStream(resp.Body, stdout, stderr)
	}
	var res executor.ProcessResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("airlock serve: decoding the result: %w", err)
	}
	return &res, nil
}

// readProcessStream copies NDJSON chunks to their writers and returns
// the last line's result (or its error).
func readProcessStream(r io.Reader, stdout, stderr io.Writer) (*executor.ProcessResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var line struct {
			Stdout   *string                 `json:"stdout"`
			Stderr   *string                 `json:"stderr"`
			Encoding string                  `json:"encoding"`
			Result   *executor.ProcessResult `json:"result"`
			Error    *policy.ErrorInfo       `json:"error"`
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
			return nil, &Error{Status: http.StatusOK, ErrorInfo: *line.Error}
		case line.Result != nil:
			return line.Result, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("airlock serve: the stream ended without a result")
}

// StartProcess starts a process in the background and returns it as
// soon as it runs.
func (s *Sandbox) StartProcess(ctx context.Context, p ProcessSpec) (*executor.ProcessInfo, error) {
	data, err := p.body(true)
	if err != nil {
		return nil, err
	}
	var info executor.ProcessInfo
	return &info, s.c.do(ctx, http.MethodPost, s.path("/processes"), data, &info)
}

// Processes lists the sandbox's processes: running, and recently ended.
func (s *Sandbox) Processes(ctx context.Context) ([]executor.ProcessInfo, error) {
	var out []executor.ProcessInfo
	return out, s.c.do(ctx, http.MethodGet, s.path("/processes"), nil, &out)
}

// Process describes process pid.
func (s *Sandbox) Process(ctx context.Context, pid int) (*executor.ProcessInfo, error) {
	var info executor.ProcessInfo
	return &info, s.c.do(ctx, http.MethodGet, s.procPath(pid, ""), nil, &info)
}

func (s *Sandbox) procPath(pid int, rest string) string {
	return s.path("/processes/" + strconv.Itoa(pid) + rest)
}

// Chunk is what a stream of a process held from an offset on.
type Chunk struct {
	Data []byte
	// Next is the offset after Data; Dropped counts the bytes past the
	// offset that the server's buffer no longer held; EOF: the stream
	// ended and all of it was returned.
	Next, Dropped int64
	EOF           bool
}

// Output returns what stream ("stdout" or "stderr") of process pid
// holds from offset on.
func (s *Sandbox) Output(ctx context.Context, pid int, stream string, offset int64) (*Chunk, error) {
	var w struct {
		Data     string `json:"data"`
		Encoding string `json:"encoding"`
		Next     int64  `json:"next"`
		Dropped  int64  `json:"dropped"`
		EOF      bool   `json:"eof"`
	}
	q := "?stream=" + url.QueryEscape(stream) + "&offset=" + strconv.FormatInt(offset, 10)
	if err := s.c.do(ctx, http.MethodGet, s.procPath(pid, "/output"+q), nil, &w); err != nil {
		return nil, err
	}
	c := &Chunk{Data: []byte(w.Data), Next: w.Next, Dropped: w.Dropped, EOF: w.EOF}
	if w.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(w.Data)
		if err != nil {
			return nil, err
		}
		c.Data = b
	}
	return c, nil
}

// Follow streams process pid's output from the offsets into stdout and
// stderr until it ends, and returns its result.
func (s *Sandbox) Follow(ctx context.Context, pid int, stdoutOff, stderrOff int64, stdout, stderr io.Writer) (*executor.ProcessResult, error) {
	q := fmt.Sprintf("?follow=1&stdout_offset=%d&stderr_offset=%d", stdoutOff, stderrOff)
	hr, err := s.c.request(ctx, http.MethodGet, s.procPath(pid, "/output"+q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp)
	}
	return readProcessStream(resp.Body, stdout, stderr)
}

// Stdin writes data to process pid's stdin, and closes it when close.
func (s *Sandbox) Stdin(ctx context.Context, pid int, data []byte, close bool) error {
	q := ""
	if close {
		q = "?close=1"
	}
	b, _ := json.Marshal(map[string]any{"data": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
	return s.c.do(ctx, http.MethodPost, s.procPath(pid, "/stdin"+q), b, nil)
}

// Signal sends sig to process pid's process group.
func (s *Sandbox) Signal(ctx context.Context, pid int, sig syscall.Signal) error {
	b, _ := json.Marshal(map[string]int{"signal": int(sig)})
	return s.c.do(ctx, http.MethodPost, s.procPath(pid, "/signal"), b, nil)
}

// Resize sets the size of process pid's terminal.
func (s *Sandbox) Resize(ctx context.Context, pid int, rows, cols uint16) error {
	b, _ := json.Marshal(TTYSize{Rows: rows, Cols: cols})
	return s.c.do(ctx, http.MethodPost, s.procPath(pid, "/resize"), b, nil)
}

// PTYConn is an attached terminal: Read is its output, Write its input.
type PTYConn struct {
	ws  *websocket.Conn
	mu  sync.Mutex
	buf []byte
	res *executor.ProcessResult
	err error
}

// PTY attaches to process pid (a pty's, or one with its stdin open):
// its output from offset 0, and its input. Closing it detaches and
// leaves the process running.
func (s *Sandbox) PTY(ctx context.Context, pid int) (*PTYConn, error) {
	conn, err := s.c.dial(ctx)
	if err != nil {
		return nil, err
	}
	u := strings.Replace(s.c.base, "http", "ws", 1) + s.procPath(pid, "/pty")
	cfg, err := websocket.NewConfig(u, "http://localhost")
	if err != nil {
		conn.Close()
		return nil, err
	}
	// The handshake always sends an Origin: a loopback one, which the
	// server's guard of a loopback listener without a token accepts.
	cfg.Header = http.Header{}
	if s.c.token != "" {
		cfg.Header.Set("Authorization", "Bearer "+s.c.token)
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		conn.Close()
		var de *websocket.DialError
		if errors.As(err, &de) {
			return nil, fmt.Errorf("airlock serve: attaching to process %d: %w", pid, de.Err)
		}
		return nil, fmt.Errorf("airlock serve: attaching to process %d: %w", pid, err)
	}
	conn.SetDeadline(time.Time{})
	ws.PayloadType = websocket.BinaryFrame
	return &PTYConn{ws: ws}, nil
}

// Read reads the terminal's output; io.EOF once the process ended
// (Result then says how).
func (p *PTYConn) Read(b []byte) (int, error) {
	for len(p.buf) == 0 {
		var f struct {
			data []byte
			text bool
		}
		codec := websocket.Codec{Unmarshal: func(data []byte, pt byte, _ any) error {
			f.data, f.text = data, pt == websocket.TextFrame
			return nil
		}}
		if err := codec.Receive(p.ws, nil); err != nil {
			return 0, io.EOF
		}
		if f.text {
			var last struct {
				Result *executor.ProcessResult `json:"result"`
				Error  *policy.ErrorInfo       `json:"error"`
			}
			if json.Unmarshal(f.data, &last) == nil {
				p.mu.Lock()
				p.res = last.Result
				if last.Error != nil {
					p.err = &Error{Status: http.StatusOK, ErrorInfo: *last.Error}
				}
				p.mu.Unlock()
			}
			continue
		}
		p.buf = f.data
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// Write writes to the terminal's input.
func (p *PTYConn) Write(b []byte) (int, error) {
	if err := websocket.Message.Send(p.ws, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Resize sets the terminal's size.
func (p *PTYConn) Resize(rows, cols uint16) error {
	b, _ := json.Marshal(map[string]TTYSize{"resize": {Rows: rows, Cols: cols}})
	return websocket.Message.Send(p.ws, string(b))
}

// CloseStdin closes the process's input (its terminal's, for a pty: the
// process then reads end of file only if it reads a closed pty).
func (p *PTYConn) CloseStdin() error {
	return websocket.Message.Send(p.ws, `{"close_stdin":true}`)
}

// Result is the process's result once Read returned io.EOF after the
// process ended (nil if the connection ended first).
func (p *PTYConn) Result() (*executor.ProcessResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res, p.err
}

// Close detaches; the process runs on.
func (p *PTYConn) Close() error { return p.ws.Close() }

// ReadFile opens name (relative to /workspace) for reading, streamed.
func (s *Sandbox) ReadFile(ctx context.Context, name string) (io.ReadCloser, error) {
	hr, err := s.c.request(ctx, http.MethodGet, s.path("/files/"+escapePath(name)), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp.Body, nil
}

// WriteFile streams r into name (relative to /workspace; parents made),
// and returns the bytes written.
func (s *Sandbox) WriteFile(ctx context.Context, name string, r io.Reader) (int64, error) {
	hr, err := s.c.request(ctx, http.MethodPut, s.path("/files/"+escapePath(name)), r)
	if err != nil {
		return 0, err
	}
	hr.Header.Set("Content-Type", "application/octet-stream")
	resp, err := s.c.hc.Do(hr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, readError(resp)
	}
	var out struct {
		Size int64 `json:"size"`
	}
	return out.Size, json.NewDecoder(resp.Body).Decode(&out)
}

// FileList is a sandbox's file listing; Omitted counts what was cut.
type FileList struct {
	Files   []FileEntry `json:"files"`
	Total   int         `json:"total"`
	Omitted int         `json:"omitted"`
}

// Files lists the sandbox's /workspace.
func (s *Sandbox) Files(ctx context.Context) (*FileList, error) {
	var out FileList
	return &out, s.c.do(ctx, http.MethodGet, s.path("/files"), nil, &out)
}

// RemoveFile removes name (recursively) from /workspace.
func (s *Sandbox) RemoveFile(ctx context.Context, name string) error {
	return s.c.do(ctx, http.MethodDelete, s.path("/files/"+escapePath(name)), nil, nil)
}

// PortHTTP returns an http.Client whose requests reach the sandbox's
// port: a request for http://anything/PATH goes to PATH on it, through
// the server's proxy.
func (s *Sandbox) PortHTTP(port int) *http.Client {
	return &http.Client{Transport: &portTransport{s: s, port: port}}
}

type portTransport struct {
	s    *Sandbox
	port int
}

func (t *portTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	u, err := url.Parse(t.s.c.base + t.s.path("/ports/"+strconv.Itoa(t.port)+r.URL.EscapedPath()))
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(r.URL.EscapedPath(), "/") {
		u.Path += "/"
	}
	u.RawQuery = r.URL.RawQuery
	out := r.Clone(r.Context())
	out.URL, out.Host, out.RequestURI = u, "", ""
	if t.s.c.token != "" {
		out.Header.Set("Authorization", "Bearer "+t.s.c.token)
	}
	return t.s.c.hc.Transport.RoundTrip(out)
}

// DialPort opens a TCP connection to the sandbox's port, through the
// server's tunnel.
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	conn, err := s.c.dial(ctx)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.base+s.path("/ports/"+strconv.Itoa(port)), nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	hr.Header.Set("Connection", "Upgrade")
	hr.Header.Set("Upgrade", "tcp")
	if s.c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+s.c.token)
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	if err := hr.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, hr)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		return nil, readError(resp)
	}
	conn.SetDeadline(time.Time{})
	return &bufConn{Conn: conn, r: br}, nil
}

// bufConn reads first what the response's reader buffered.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// CloseWrite half-closes the tunnel, when the connection can.
func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("airlock: this connection cannot half-close")
}
