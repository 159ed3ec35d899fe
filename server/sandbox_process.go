package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/net/websocket"
	"golang.org/x/sys/unix"
)

// ProcessBody is the body of POST /v1/sandboxes/{id}/processes.
type ProcessBody struct {
	// Exactly one of Argv, Command (run as /bin/sh -c COMMAND), or
	// Language with Code (Argv are then the program's arguments).
	Argv     []string `json:"argv,omitempty"`
	Command  string   `json:"command,omitempty"`
	Language string   `json:"language,omitempty"`
	Code     string   `json:"code,omitempty"`
	// Env is added to the sandbox's environment for this process.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the working directory inside ("" = /workspace).
	Cwd string `json:"cwd,omitempty"`
	// Stdin is given at once (StdinEncoding utf8, base64 or hex); with
	// StdinOpen it stays open after it for .../stdin (background only).
	Stdin         string `json:"stdin,omitempty"`
	StdinEncoding string `json:"stdin_encoding,omitempty"`
	StdinOpen     bool   `json:"stdin_open,omitempty"`
	// PTY runs it on a terminal of this size (background only; its
	// output is all stdout; GET .../pty attaches to it).
	PTY *PTYSize `json:"pty,omitempty"`
	// Background answers 201 with the process as soon as it runs;
	// otherwise the answer is its result once it ends.
	Background bool `json:"background,omitempty"`
	// Timeout kills it after that long. Foreground: default and
	// maximum the policy's timeout, as for a run; background: none by
	// default (it lives until killed or the sandbox ends).
	Timeout *policy.Duration `json:"timeout,omitempty"`
	// Tag is opaque, returned in the process's description.
	Tag string `json:"tag,omitempty"`
}

// PTYSize is a terminal's size.
type PTYSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// processRequest resolves a process body for ls.
func (s *Server) processRequest(ls *liveSandbox, b *ProcessBody) (executor.ProcessRequest, []byte, error) {
	req := executor.ProcessRequest{Command: b.Command, Env: b.Env, Dir: b.Cwd, Tag: b.Tag}
	given := 0
	if len(b.Argv) > 0 && b.Language == "" {
		given++
	}
	if b.Command != "" {
		given++
	}
	if b.Language != "" {
		given++
	}
	switch {
	case given == 0:
		return req, nil, policy.Invalid("argv", "required: argv, command, or language and code")
	case given > 1:
		return req, nil, policy.Invalid("argv", "give one of argv, command, or language and code")
	case b.Code != "" && b.Language == "":
		return req, nil, policy.Invalid("code", "goes with language")
	}
	if b.Language != "" {
		if _, err := s.ex.Language(b.Language); err != nil {
			return req, nil, err
		}
		req.Language, req.Code = b.Language, b.Code
	} else if len(b.Argv) > 0 && b.Argv[0] == "" {
		return req, nil, policy.Invalid("argv", "argv[0] is empty")
	}
	for i, a := range b.Argv {
		if strings.ContainsRune(a, 0) {
			return req, nil, policy.Invalid("argv", "argv[%d] holds a NUL byte", i)
		}
	}
	req.Argv = b.Argv
	if strings.ContainsRune(b.Command, 0) || strings.ContainsRune(b.Cwd, 0) || strings.ContainsRune(b.Code, 0) {
		return req, nil, policy.Invalid("command", "holds a NUL byte")
	}
	for k, v := range b.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return req, nil, policy.Invalid("env", "bad variable name %q", k)
		}
		if strings.ContainsRune(v, 0) {
			return req, nil, policy.Invalid("env", "the value of %s holds a NUL byte", k)
		}
	}
	stdin, err := decodeContent("stdin", b.Stdin, b.StdinEncoding)
	if err != nil {
		return req, nil, err
	}
	if b.PTY != nil {
		if !b.Background {
			return req, nil, policy.Invalid("pty", "a pty goes with background: true (then attach with GET .../processes/{pid}/pty)")
		}
		if b.PTY.Rows == 0 || b.PTY.Cols == 0 {
			return req, nil, policy.Invalid("pty", "rows and cols must be positive")
		}
		req.TTY = &executor.TTYSize{Rows: b.PTY.Rows, Cols: b.PTY.Cols}
	}
	if b.StdinOpen && !b.Background {
		return req, nil, policy.Invalid("stdin_open", "goes with background: true (a foreground process gets its stdin in the request)")
	}
	req.Stdin = b.StdinOpen || len(stdin) > 0 || b.PTY != nil
	limit := time.Duration(ls.pol.Timeout)
	if b.Timeout != nil {
		switch t := time.Duration(*b.Timeout); {
		case t <= 0:
			return req, nil, policy.Invalid("timeout", "must be positive")
		case !b.Background && t > limit:
			return req, nil, policy.Invalid("timeout", "%v is above the sandbox's maximum %v (its policy's timeout; a longer one runs in the background)", t, limit)
		default:
			req.Timeout = t
		}
	} else if !b.Background {
		req.Timeout = limit
	}
	return req, stdin, nil
}

// wantsNDJSON: ?stream=1, or Accept: application/x-ndjson.
func wantsNDJSON(r *http.Request) bool {
	if v := r.URL.Query().Get("stream"); v == "1" || v == "true" {
		return true
	}
	return wantsStream(r)
}

func (s *Server) handleProcessStart(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	var b ProcessBody
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	req, stdin, err := s.processRequest(ls, &b)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if !b.Background && !wantsNDJSON(r) {
		// The foreground form: the library's Run (its output past
		// max_output kills it, output_limit; the client leaving kills
		// it, cancelled).
		ls.start.Lock()
		err := s.admitProcess(ls)
		ls.start.Unlock()
		if err != nil {
			s.fail(w, http.StatusTooManyRequests, err, nil)
			return
		}
		ctx, cancel := s.runContext(r)
		defer cancel()
		if len(stdin) == 0 {
			stdin = nil
		}
		res, err := ls.sb.Run(ctx, req, stdin)
		if ferr := s.processFull(err); ferr != nil {
			s.fail(w, http.StatusTooManyRequests, ferr, nil)
			return
		}
		if err != nil {
			s.fail(w, s.closedStatus(err), s.killedByDrain(err), nil)
			return
		}
		if r.Context().Err() == nil {
			writeJSON(w, http.StatusOK, res)
		}
		return
	}
	// A background process outlives its request: it starts under a
	// context of its own (the sandbox bounds it). A streamed foreground
	// one is its request's: a client that leaves kills it (not the
	// sandbox).
	ls.start.Lock()
	if err := s.admitProcess(ls); err != nil {
		ls.start.Unlock()
		s.fail(w, http.StatusTooManyRequests, err, nil)
		return
	}
	p, err := ls.sb.Exec(context.WithoutCancel(r.Context()), req)
	ls.start.Unlock()
	if ferr := s.processFull(err); ferr != nil {
		s.fail(w, http.StatusTooManyRequests, ferr, nil)
		return
	}
	if err != nil {
		s.fail(w, s.closedStatus(err), err, nil)
		return
	}
	if req.Stdin {
		// Written beside the answer: a program that does not read yet
		// must not hold its request past a pipe's worth of stdin.
		closeIt := !b.StdinOpen && b.PTY == nil
		go func() {
			if len(stdin) > 0 {
				if _, err := p.Write(stdin); err != nil {
					s.log.Debug("process stdin", "sandbox", ls.sb.ID(), "pid", p.PID(), "error", err)
				}
			}
			if closeIt {
				p.CloseStdin()
			}
		}()
	}
	if b.Background {
		w.Header().Set("Location", "/v1/sandboxes/"+ls.sb.ID()+"/processes/"+strconv.Itoa(p.PID()))
		writeJSON(w, http.StatusCreated, p.Info())
		return
	}
	ctx, cancel := s.runContext(r)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { p.Kill() })
	defer stop()
	defer ls.sb.Hold()() // a client attached uses the sandbox, however quiet the process
	s.followProcess(w, r, ctx, p, 0, 0, "", true)
}

// followOut calls fn with p's output from the offsets until p ended and
// all of it was given (nil), ctx ends or fn fails. (Process.Follow
// waits for both streams' ends; a pty's process has one stream, so the
// end is taken from p.Done, and what came before it is read after.)
func followOut(ctx context.Context, p *executor.Process, offs [2]int64, fn func(stream string, data []byte) error) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-fctx.Done():
		}
	}()
	err := p.Follow(fctx, offs[0], offs[1], func(stream string, data []byte) error {
		if stream == "stderr" {
			offs[1] += int64(len(data))
		} else {
			offs[0] += int64(len(data))
		}
		return fn(stream, data)
	})
	if err == nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if !errors.Is(err, context.Canceled) {
		return err // fn's
	}
	// p ended: its output is all in (Done is closed after the drain).
	for i, name := range []string{"stdout", "stderr"} {
		if data, _, _, _ := p.Output(name, offs[i]); len(data) > 0 {
			if err := fn(name, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// followProcess streams p's output from the offsets as NDJSON lines
// ({"stdout": ...}, {"stderr": ...}, with "encoding": "base64" when a
// chunk is not UTF-8), then {"result": ...} once it ended. blank drops
// the result's captured output (it was streamed).
func (s *Server) followProcess(w http.ResponseWriter, r *http.Request, ctx context.Context, p *executor.Process, outOff, errOff int64, only string, blank bool) {
	st := &stream{w: w, rc: http.NewResponseController(w), limit: math.MaxInt64, cancel: func() {}, start: time.Now()}
	out, errw := st.writer(0), st.writer(1)
	err := followOut(ctx, p, [2]int64{outOff, errOff}, func(name string, data []byte) error {
		switch {
		case only != "" && name != only:
		case name == "stderr":
			errw.Write(data)
		default:
			out.Write(data)
		}
		return nil
	})
	var res *executor.ProcessResult
	if err == nil {
		res, err = p.Wait(ctx)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range st.pend {
		if len(st.pend[i]) > 0 {
			st.chunk(i, nil, true)
		}
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left
		}
		info := policy.Describe(s.killedByDrain(err))
		if !st.started {
			st.started = true
			st.w.Header().Set("Content-Type", "application/x-ndjson")
			st.w.WriteHeader(statusOf(info))
		}
		st.line(errorBody{Error: info})
		return
	}
	if blank {
		res.Stdout, res.Stderr = "", ""
	}
	st.line(map[string]any{"result": res})
}

func (s *Server) handleProcessList(w http.ResponseWriter, r *http.Request) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return
	}
	ls.sb.Touch()
	out := ls.sb.Processes()
	if out == nil {
		out = []executor.ProcessInfo{}
	}
	writeJSON(w, http.StatusOK, out)
}

// lookupProcess returns the request's {pid} process of its {id}
// sandbox, or answers 404.
func (s *Server) lookupProcess(w http.ResponseWriter, r *http.Request) (*liveSandbox, *executor.Process) {
	ls := s.lookupSandbox(w, r)
	if ls == nil {
		return nil, nil
	}
	raw := r.PathValue("pid")
	pid, err := strconv.Atoi(raw)
	var p *executor.Process
	if err == nil && pid > 0 {
		p = ls.sb.Process(pid)
	}
	if p == nil {
		s.fail(w, http.StatusNotFound, policy.Invalid("pid", "no process %q in this sandbox (see GET .../processes; an ended one is kept until its output was read or 64 newer ended)", raw), nil)
		return nil, nil
	}
	return ls, p
}

func (s *Server) handleProcessGet(w http.ResponseWriter, r *http.Request) {
	if _, p := s.lookupProcess(w, r); p != nil {
		writeJSON(w, http.StatusOK, p.Info())
	}
}

// OutputChunk is what a process's stream holds from an offset on.
type OutputChunk struct {
	Data string `json:"data"`
	// Encoding is "base64" when Data is not UTF-8 text.
	Encoding string `json:"encoding,omitempty"`
	// Next is the offset after Data: the next call's offset.
	Next int64 `json:"next"`
	// Dropped counts the bytes from the offset asked that the buffer no
	// longer held (it keeps the last max_output bytes of each stream).
	Dropped int64 `json:"dropped"`
	// EOF: the stream ended and everything of it was returned.
	EOF bool `json:"eof"`
}

// Output is GET .../output without ?stream: both streams and the state.
type Output struct {
	Stdout  OutputChunk          `json:"stdout"`
	Stderr  OutputChunk          `json:"stderr"`
	Process executor.ProcessInfo `json:"process"`
}

func chunkOf(data []byte, next, dropped int64, eof bool) OutputChunk {
	c := OutputChunk{Next: next, Dropped: dropped, EOF: eof}
	if utf8.Valid(data) {
		c.Data = string(data)
	} else {
		c.Data, c.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return c
}

// offsetParam reads a non-negative offset query parameter (0 if absent).
func offsetParam(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, policy.Invalid(name, "%q is not a byte offset (a whole number, at least 0)", v)
	}
	return n, nil
}

// handleProcessOutput: ?stream=stdout|stderr&offset=N returns that
// stream's chunk; without stream, both (?stdout_offset, ?stderr_offset,
// or ?offset for both); ?follow=1 streams NDJSON from the offsets until
// the process ends.
func (s *Server) handleProcessOutput(w http.ResponseWriter, r *http.Request) {
	ls, p := s.lookupProcess(w, r)
	if p == nil {
		return
	}
	ls.sb.Touch()
	q := r.URL.Query()
	which := q.Get("stream")
	if which != "" && which != "stdout" && which != "stderr" {
		s.fail(w, 0, policy.Invalid("stream", "%q is not stdout or stderr", which), nil)
		return
	}
	off, err := offsetParam(r, "offset")
	outOff, errOff := off, off
	if err == nil && q.Has("stdout_offset") {
		outOff, err = offsetParam(r, "stdout_offset")
	}
	if err == nil && q.Has("stderr_offset") {
		errOff, err = offsetParam(r, "stderr_offset")
	}
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if v := q.Get("follow"); v == "1" || v == "true" {
		ctx, cancel := s.runContext(r)
		defer cancel()
		defer ls.sb.Hold()()
		s.followProcess(w, r, ctx, p, outOff, errOff, which, false)
		return
	}
	if which != "" {
		writeJSON(w, http.StatusOK, chunkOf(p.Output(which, off)))
		return
	}
	o := Output{Stdout: chunkOf(p.Output("stdout", outOff)), Stderr: chunkOf(p.Output("stderr", errOff)), Process: p.Info()}
	writeJSON(w, http.StatusOK, o)
}

// StdinBody is POST .../stdin's body when it is JSON (Content-Type:
// application/json); any other body is the bytes themselves.
type StdinBody struct {
	Data     string `json:"data"`
	Encoding string `json:"encoding,omitempty"`
	Close    bool   `json:"close,omitempty"`
}

func isJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json"
}

func (s *Server) handleProcessStdin(w http.ResponseWriter, r *http.Request) {
	_, p := s.lookupProcess(w, r)
	if p == nil {
		return
	}
	closeIt := r.URL.Query().Get("close") == "1" || r.URL.Query().Get("close") == "true"
	var data []byte
	body, err := s.readBody(w, r)
	if err == nil && isJSON(r) && len(body) > 0 {
		var b StdinBody
		if err = decodeJSON(body, &b); err == nil {
			data, err = decodeContent("data", b.Data, b.Encoding)
			closeIt = closeIt || b.Close
		}
	} else {
		data = body
	}
	if err != nil {
		s.failDecode(w, err)
		return
	}
	if len(data) > 0 {
		if _, err := p.Write(data); err != nil {
			s.fail(w, 0, err, nil)
			return
		}
	}
	if closeIt {
		if err := p.CloseStdin(); err != nil {
			s.fail(w, 0, err, nil)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// SignalBody is POST .../signal's body: "TERM", "SIGTERM" or 15.
type SignalBody struct {
	Signal json.RawMessage `json:"signal"`
}

// parseSignal reads a signal name or number.
func parseSignal(raw json.RawMessage) (syscall.Signal, error) {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		if n < 1 || n > 64 {
			return 0, policy.Invalid("signal", "%d is not a signal number (1 to 64)", n)
		}
		return syscall.Signal(n), nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil || name == "" {
		return 0, policy.Invalid("signal", "required: a name (\"TERM\", \"SIGKILL\") or a number")
	}
	up := strings.ToUpper(name)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	if sig := unix.SignalNum(up); sig != 0 {
		return sig, nil
	}
	return 0, policy.Invalid("signal", "%q is not a signal name", name)
}

func (s *Server) handleProcessSignal(w http.ResponseWriter, r *http.Request) {
	_, p := s.lookupProcess(w, r)
	if p == nil {
		return
	}
	var b SignalBody
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	sig, err := parseSignal(b.Signal)
	if err == nil {
		err = p.Signal(sig)
	}
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleProcessResize(w http.ResponseWriter, r *http.Request) {
	_, p := s.lookupProcess(w, r)
	if p == nil {
		return
	}
	var b PTYSize
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	if b.Rows == 0 || b.Cols == 0 {
		s.fail(w, 0, policy.Invalid("rows", "rows and cols must be positive"), nil)
		return
	}
	if err := p.Resize(b.Rows, b.Cols); err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// PTYControl is a text frame of the pty websocket. From the client:
// {"resize": {"rows", "cols"}}, {"close_stdin": true}, {"signal": ...}.
// From the server, the last frame: {"result": ...} (or {"error": ...}).
type PTYControl struct {
	Resize     *PTYSize        `json:"resize,omitempty"`
	CloseStdin bool            `json:"close_stdin,omitempty"`
	Signal     json.RawMessage `json:"signal,omitempty"`
}

// handleProcessPTY attaches to a process (a pty's, or any with its stdin
// open) as a websocket (RFC 6455): binary frames carry bytes both ways
// (the client's to its stdin, its output to the client, from ?offset=N,
// default 0: the prompt so far); text frames carry PTYControl; the
// server's last frame is the result, then it closes. A client that
// closes the socket leaves the process running.
func (s *Server) handleProcessPTY(w http.ResponseWriter, r *http.Request) {
	ls, p := s.lookupProcess(w, r)
	if p == nil {
		return
	}
	off, err := offsetParam(r, "offset")
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.fail(w, http.StatusUpgradeRequired, policy.Invalid("upgrade", "GET .../pty is a websocket: send Upgrade: websocket (RFC 6455)"), nil)
		return
	}
	// The Origin was checked by LoopbackGuard (a listener without a
	// token) or a bearer token was sent (which a page cannot make a
	// browser add): the handshake checks nothing more.
	ws := websocket.Server{Handshake: func(*websocket.Config, *http.Request) error { return nil }, Handler: func(c *websocket.Conn) {
		s.relayPTY(r.Context(), ls, p, c, off)
	}}
	ws.ServeHTTP(w, r)
}

func (s *Server) relayPTY(ctx context.Context, ls *liveSandbox, p *executor.Process, c *websocket.Conn, off int64) {
	defer c.Close()
	defer ls.sb.Hold()()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.kill, cancel)
	defer stop()
	go func() {
		// The client's frames, until it leaves (the relay then ends; the
		// process runs on) or the relay ends and closes c.
		defer cancel()
		for {
			var f wsFrame
			if err := frameCodec.Receive(c, &f); err != nil {
				return
			}
			ls.sb.Touch()
			if f.text {
				var ctl PTYControl
				if json.Unmarshal(f.data, &ctl) != nil {
					continue
				}
				switch {
				case ctl.Resize != nil && ctl.Resize.Rows > 0 && ctl.Resize.Cols > 0:
					p.Resize(ctl.Resize.Rows, ctl.Resize.Cols)
				case ctl.CloseStdin:
					p.CloseStdin()
				case len(ctl.Signal) > 0:
					if sig, err := parseSignal(ctl.Signal); err == nil {
						p.Signal(sig)
					}
				}
				continue
			}
			// A process that has ended, or closed its terminal, takes no
			// more input: what the client still types is dropped, and
			// the relay goes on to the output's end and the result. (It
			// used to stop here, and the cancel ended the relay without
			// the result: CI's TestSandboxCLI typed after bash's exit.)
			p.Write(f.data)
		}
	}()
	err := followOut(ctx, p, [2]int64{off, off}, func(_ string, data []byte) error {
		ls.sb.Touch()
		return websocket.Message.Send(c, data)
	})
	if err != nil {
		return // the client left: the process runs on
	}
	res, err := p.Wait(ctx)
	var last any
	if err != nil {
		last = errorBody{Error: policy.Describe(err)}
	} else {
		res.Stdout, res.Stderr = "", ""
		last = map[string]any{"result": res}
	}
	b, _ := json.Marshal(last)
	websocket.Message.Send(c, string(b))
}

// wsFrame is one received websocket message and whether it was text.
type wsFrame struct {
	data []byte
	text bool
}

// frameCodec receives a message with its frame type (x/net/websocket's
// Message codec does not say which it was).
var frameCodec = websocket.Codec{
	Marshal: func(v any) ([]byte, byte, error) { return nil, 0, websocket.ErrNotSupported },
	Unmarshal: func(data []byte, payloadType byte, v any) error {
		f := v.(*wsFrame)
		f.data, f.text = data, payloadType == websocket.TextFrame
		return nil
	},
}
