package e2b

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// The code interpreter (E2B's port 49999): POST /execute streams a cell's
// output as JSON lines, /contexts creates, lists, restarts and deletes
// contexts. A context is one persistent interpreter process in the
// sandbox (Python, JavaScript or bash), running a driver of this package
// (drivers/) that airlock writes outside /workspace (the executor's
// Language+Code) and talks to over the process's stdin and stdout.

//go:embed drivers/python.py
var pythonDriver string

//go:embed drivers/node.js
var nodeDriver string

//go:embed drivers/bash.sh
var bashDriver string

// interpreterTag tags the drivers' processes (process List hides them).
const interpreterTag = "airlock-e2b-interpreter"

// frame starts a driver's message on its stdout.
const frame = 0x1e

// languageOf is the context language of an SDK's name, or "".
func languageOf(name string) string {
	switch strings.ToLower(name) {
	case "", "python", "python3", "py":
		return "python"
	case "javascript", "js", "node", "nodejs":
		return "javascript"
	case "bash", "sh", "shell":
		return "bash"
	}
	return ""
}

type interpreter struct {
	s        *sandbox
	mu       sync.Mutex
	ctxs     map[string]*codeContext
	defaults map[string]*codeContext // by language
	closed   bool
}

func newInterpreter(s *sandbox) *interpreter {
	return &interpreter{s: s, ctxs: map[string]*codeContext{}, defaults: map[string]*codeContext{}}
}

// codeContext is one context: its driver process and the execution that
// owns its output.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`

	turn chan struct{} // held by the execution running in it

	mu   sync.Mutex
	p    Proc
	dead chan struct{} // closed once the driver's output ended
	sink func(msg map[string]any)
}

func (ci *interpreter) closeAll() {
	ci.mu.Lock()
	ci.closed = true
	all := make([]*codeContext, 0, len(ci.ctxs))
	for _, c := range ci.ctxs {
		all = append(all, c)
	}
	ci.ctxs = map[string]*codeContext{}
	ci.defaults = map[string]*codeContext{}
	ci.mu.Unlock()
	for _, c := range all {
		c.stop()
	}
}

func (c *codeContext) stop() {
	c.mu.Lock()
	p := c.p
	c.p = nil
	c.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// start starts c's driver (again); the caller holds c's turn, or c is
// not yet listed.
func (c *codeContext) start(s *sandbox) error {
	req := ProcRequest{Stdin: true, Dir: c.Cwd, Tag: interpreterTag, Env: map[string]string{
		// matplotlib: no display, a writable cache, and Debian's matplotlibrc
		// (its /etc/matplotlibrc is not in the sandbox; /usr is).
		"MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.airlock-mpl", "MATPLOTLIBRC": "/usr/share/matplotlib/mpl-data/matplotlibrc"}}
	switch c.Language {
	case "python":
		req.Language, req.Code = "python", pythonDriver
	case "javascript":
		req.Language, req.Code = "node", nodeDriver
	case "bash":
		req.Language, req.Code = "bash", bashDriver
	}
	p, err := s.exec(context.Background(), req)
	if err != nil {
		return err
	}
	dead := make(chan struct{})
	c.mu.Lock()
	c.p, c.dead = p, dead
	c.mu.Unlock()
	go c.read(p, dead)
	return nil
}

// read demultiplexes the driver's output for the execution that runs:
// framed messages as they are, unframed text as stdout or stderr.
func (c *codeContext) read(p Proc, dead chan struct{}) {
	defer close(dead)
	var out, errb []byte
	deliver := func(m map[string]any) {
		c.mu.Lock()
		sink := c.sink
		c.mu.Unlock()
		if sink != nil {
			sink(m)
		}
	}
	text := func(kind string, b []byte) []byte {
		// Hold back an incomplete UTF-8 sequence at the end.
		cut := len(b)
		for i := 1; i <= 3 && i <= len(b); i++ {
			if r, _ := utf8.DecodeLastRune(b[:len(b)-i+1]); r != utf8.RuneError {
				break
			}
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					cut = len(b) - i
				}
				break
			}
		}
		if cut > 0 {
			deliver(map[string]any{"type": kind, "text": strings.ToValidUTF8(string(b[:cut]), "\uFFFD")})
		}
		return append([]byte(nil), b[cut:]...)
	}
	p.Follow(context.Background(), 0, 0, func(stream string, data []byte) error {
		if stream == "stderr" {
			errb = text("stderr", append(errb, data...))
			return nil
		}
		out = append(out, data...)
		for len(out) > 0 {
			i := bytes.IndexByte(out, frame)
			if i < 0 {
				out = text("stdout", out)
				return nil
			}
			if i > 0 {
				if rest := text("stdout", out[:i]); len(rest) > 0 {
					deliver(map[string]any{"type": "stdout", "text": strings.ToValidUTF8(string(rest), "\uFFFD")})
				}
				out = out[i:]
			}
			nl := bytes.IndexByte(out, '\n')
			if nl < 0 {
				return nil // the rest of the message comes later
			}
			var m map[string]any
			if err := json.Unmarshal(out[1:nl], &m); err != nil {
				m = map[string]any{"type": "stdout", "text": string(out[:nl+1])}
			}
			out = out[nl+1:]
			deliver(m)
		}
		return nil
	})
}

// context returns the context for an execute (id, or the language's
// default, made on first use).
func (ci *interpreter) context(id, lang string) (*codeContext, int, error) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.closed {
		return nil, http.StatusBadGateway, errors.New("the sandbox ended")
	}
	if id != "" {
		c := ci.ctxs[id]
		if c == nil {
			return nil, http.StatusNotFound, fmt.Errorf("context %q not found", id)
		}
		return c, 0, nil
	}
	if c := ci.defaults[lang]; c != nil {
		return c, 0, nil
	}
	c := ci.add(lang, workspace)
	ci.defaults[lang] = c
	return c, 0, nil
}

// add makes a context (its driver starts with its first execution, or at
// once for a created one). ci.mu held.
func (ci *interpreter) add(lang, cwd string) *codeContext {
	c := &codeContext{ID: newToken()[:16], Language: lang, Cwd: cwd, turn: make(chan struct{}, 1)}
	ci.ctxs[c.ID] = c
	return c
}

func (h *Handler) serveInterpreter(w http.ResponseWriter, r *http.Request, s *sandbox) {
	ci := s.ci
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/health":
		w.WriteHeader(http.StatusNoContent)
	case p == "/execute" && r.Method == http.MethodPost:
		h.execute(w, r, s)
	case p == "/execute":
		methodNotAllowed(w, r, "POST")
	case p == "/contexts" && r.Method == http.MethodPost:
		var b struct {
			Language string `json:"language"`
			Cwd      string `json:"cwd"`
		}
		if !decodeBody(w, r, &b) {
			return
		}
		lang := languageOf(b.Language)
		if lang == "" {
			fail(w, http.StatusBadRequest, "language %q is not available in airlock's code interpreter (python, javascript, bash)", b.Language)
			return
		}
		cwd := workspace
		if b.Cwd != "" {
			cwd = b.Cwd
		}
		ci.mu.Lock()
		c := ci.add(lang, cwd)
		ci.mu.Unlock()
		if err := c.start(s); err != nil {
			ci.remove(c.ID)
			failErr(w, "context", err)
			return
		}
		writeJSON(w, http.StatusOK, c)
	case p == "/contexts" && r.Method == http.MethodGet:
		ci.mu.Lock()
		out := []*codeContext{}
		for _, c := range ci.ctxs {
			out = append(out, c)
		}
		ci.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	case p == "/contexts":
		methodNotAllowed(w, r, "GET, POST")
	case strings.HasPrefix(p, "/contexts/"):
		id, action, _ := strings.Cut(strings.TrimPrefix(p, "/contexts/"), "/")
		ci.mu.Lock()
		c := ci.ctxs[id]
		ci.mu.Unlock()
		if c == nil {
			fail(w, http.StatusNotFound, "context %q not found", id)
			return
		}
		switch {
		case action == "" && r.Method == http.MethodDelete:
			ci.remove(id)
			c.stop()
			w.WriteHeader(http.StatusNoContent)
		case action == "restart" && r.Method == http.MethodPost:
			select {
			case c.turn <- struct{}{}:
			case <-r.Context().Done():
				return
			}
			defer func() { <-c.turn }()
			c.stop()
			if err := c.start(s); err != nil {
				failErr(w, "restart", err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			fail(w, http.StatusNotFound, "%s %s is not a route of the code interpreter", r.Method, r.URL.Path)
		}
	default:
		fail(w, http.StatusNotFound, "%s %s is not a route of the code interpreter (/execute, /contexts, /health)", r.Method, r.URL.Path)
	}
}

func (ci *interpreter) remove(id string) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if c := ci.ctxs[id]; c != nil {
		delete(ci.ctxs, id)
		if ci.defaults[c.Language] == c {
			delete(ci.defaults, c.Language)
		}
	}
}

func (h *Handler) execute(w http.ResponseWriter, r *http.Request, s *sandbox) {
	var b struct {
		Code      *string           `json:"code"`
		ContextID string            `json:"context_id"`
		Language  string            `json:"language"`
		EnvVars   map[string]string `json:"env_vars"`
	}
	if !decodeBody(w, r, &b) {
		return
	}
	if b.Code == nil {
		fail(w, http.StatusBadRequest, "code: required")
		return
	}
	if b.ContextID != "" && b.Language != "" {
		fail(w, http.StatusBadRequest, "context_id and language: give one, not both")
		return
	}
	lang := languageOf(b.Language)
	if lang == "" {
		fail(w, http.StatusBadRequest, "language %q is not available in airlock's code interpreter (python, javascript, bash)", b.Language)
		return
	}
	c, status, err := s.ci.context(b.ContextID, lang)
	if err != nil {
		fail(w, status, "%v", err)
		return
	}
	if c.Language == "bash" && len(b.EnvVars) > 0 {
		fail(w, http.StatusBadRequest, "env_vars are not supported in a bash context (export them in the cell)")
		return
	}
	select {
	case c.turn <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-c.turn }()
	c.mu.Lock()
	p, dead := c.p, c.dead
	c.mu.Unlock()
	alive := p != nil
	if alive {
		select {
		case <-dead:
			alive = false
		default:
		}
	}
	if !alive {
		if err := c.start(s); err != nil {
			failErr(w, "context", err)
			return
		}
		c.mu.Lock()
		p, dead = c.p, c.dead
		c.mu.Unlock()
	}
	var line []byte
	if c.Language == "bash" {
		line = []byte(base64.StdEncoding.EncodeToString([]byte(*b.Code)) + "\n")
	} else {
		line, _ = json.Marshal(map[string]any{"code": *b.Code, "env": b.EnvVars})
		line = append(line, '\n')
	}

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	var wmu sync.Mutex
	ended := make(chan struct{})
	var once sync.Once
	send := func(m map[string]any) {
		wmu.Lock()
		defer wmu.Unlock()
		select {
		case <-ended:
			return
		default:
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(m)
		if fl != nil {
			fl.Flush()
		}
		if m["type"] == "end_of_execution" {
			once.Do(func() { close(ended) })
		}
	}
	c.mu.Lock()
	c.sink = send
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.sink = nil
		c.mu.Unlock()
	}()
	if _, err := p.Write(line); err != nil {
		send(map[string]any{"type": "error", "name": "ContextError", "value": "the context's interpreter took no input: " + err.Error(), "traceback": ""})
		send(map[string]any{"type": "end_of_execution"})
		return
	}
	keep := time.NewTicker(30 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-ended:
			return
		case <-keep.C:
			send(map[string]any{"type": "keepalive"})
		case <-dead:
			select {
			case <-ended:
				return
			default:
			}
			send(map[string]any{"type": "error", "name": "ContextDied", "value": "the context's interpreter ended (the cell exited it, or it was killed); its state is lost, and the next execution starts it afresh", "traceback": ""})
			send(map[string]any{"type": "end_of_execution"})
			return
		case <-r.Context().Done():
			// The client gave up (runCode's timeoutMs): interrupt the cell
			// (KeyboardInterrupt in Python, breakOnSigint in node); a cell
			// that ignores it within 2 s loses its context.
			p.Signal(syscall.SIGINT)
			select {
			case <-ended:
			case <-dead:
			case <-time.After(2 * time.Second):
				c.stop()
			}
			return
		}
	}
}
