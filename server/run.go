package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	var b RunRequest
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	req, err := s.runToRequest(&b, false)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	s.serveRun(w, r, "run", req)
}

func (s *Server) handleExec(w http.ResponseWriter, r *http.Request) {
	var b ExecRequest
	if err := s.decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	req, err := s.execToRequest(&b, false)
	if err != nil {
		s.fail(w, 0, err, nil)
		return
	}
	s.serveRun(w, r, "exec", req)
}

// failDecode answers a body that could not be decoded: 413 when it is
// too large, 400 otherwise.
func (s *Server) failDecode(w http.ResponseWriter, err error) {
	status := 0
	var inv *policy.InvalidError
	if errors.As(err, &inv) && inv.Field == "body" && strings.HasPrefix(inv.Reason, "larger than") {
		status = http.StatusRequestEntityTooLarge
	}
	s.fail(w, status, err, nil)
}

// wantsStream reports whether the client asked for NDJSON.
func wantsStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if t, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && t == "application/x-ndjson" {
			return true
		}
	}
	return false
}

// serveRun runs req in a sandbox of its own under a run slot and writes
// its result: one JSON object, or an NDJSON stream.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request, kind string, req executor.Request) {
	release, status, err := s.admit(r.Context())
	if err != nil {
		if status == statusClientGone {
			return // the client went away while queued
		}
		s.fail(w, status, err, nil)
		return
	}
	defer release()
	ctx, cancel := s.runContext(r)
	defer cancel()
	var st *stream
	if wantsStream(r) {
		limit := int64(req.Policy.MaxOutput)
		if limit <= 0 {
			limit = int64(s.pol.MaxOutput)
		}
		st = &stream{w: w, rc: http.NewResponseController(w), limit: limit, cancel: cancel, start: time.Now(), lang: req.Language}
		req.Stdout, req.Stderr = st.writer(0), st.writer(1)
	}
	res, err := s.runObserved(ctx, kind, req)
	if st != nil {
		st.finish(res, err, s)
		return
	}
	if err != nil {
		s.fail(w, 0, err, res)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// stream writes a run's output as NDJSON lines as it comes: the HTTP
// status and headers go out with the first line, so a request refused
// before any output still gets its error status. Each stream is capped
// at limit bytes, like a captured one: past it the run is cancelled and
// its result says output_limit.
type stream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	limit  int64
	cancel context.CancelFunc
	start  time.Time
	lang   string

	mu        sync.Mutex
	started   bool
	n         [2]int64
	pend      [2][]byte // an incomplete UTF-8 sequence held for the next chunk
	truncated [2]bool
}

var streamNames = [2]string{"stdout", "stderr"}

type streamWriter struct {
	s *stream
	i int
}

func (st *stream) writer(i int) io.Writer { return &streamWriter{st, i} }

// Write never fails: a client that went away cancels the run through
// its request's context, and the program must not block on its pipe.
func (sw *streamWriter) Write(p []byte) (int, error) {
	st, i := sw.s, sw.i
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.truncated[i] {
		return len(p), nil
	}
	keep := min(int64(len(p)), st.limit-st.n[i])
	if keep < int64(len(p)) {
		st.truncated[i] = true
		st.cancel()
	}
	st.n[i] += keep
	st.chunk(i, p[:keep], false)
	return len(p), nil
}

// chunk writes one output line for stream i; holds a trailing
// incomplete UTF-8 sequence for the next one unless final. Text that is
// not valid UTF-8 goes as base64, with "encoding": "base64".
func (st *stream) chunk(i int, p []byte, final bool) {
	data := append(st.pend[i], p...)
	cut := len(data)
	if !final {
		for j := max(0, len(data)-3); j < len(data); j++ {
			if utf8.RuneStart(data[j]) && !utf8.FullRune(data[j:]) {
				cut = j
				break
			}
		}
	}
	st.pend[i] = append([]byte(nil), data[cut:]...)
	if cut == 0 {
		return
	}
	line := map[string]string{}
	if utf8.Valid(data[:cut]) {
		line[streamNames[i]] = string(data[:cut])
	} else {
		line[streamNames[i]], line["encoding"] = base64.StdEncoding.EncodeToString(data[:cut]), "base64"
	}
	st.line(line)
}

// line writes one NDJSON line and flushes it.
func (st *stream) line(v any) {
	if !st.started {
		st.started = true
		st.w.Header().Set("Content-Type", "application/x-ndjson")
		st.w.Header().Set("X-Content-Type-Options", "nosniff")
		st.w.WriteHeader(http.StatusOK)
	}
	enc := json.NewEncoder(st.w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	st.rc.Flush()
}

// finish writes the last line: {"result": ...}, or the error (with its
// HTTP status when nothing was streamed yet).
func (st *stream) finish(res *executor.Result, err error, s *Server) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range st.pend {
		if len(st.pend[i]) > 0 {
			st.chunk(i, nil, true)
		}
	}
	if st.truncated[0] || st.truncated[1] {
		// The server's cap killed it (the library caps only what it
		// captures, and reports a run it was told to cancel as such):
		// say so as the library does for a captured stream.
		if res == nil {
			res = &executor.Result{Language: st.lang}
			res.WallTimeMS = time.Since(st.start).Milliseconds()
		}
		res.Status, res.Signal, res.ExitCode = nsjail.StatusOutputLimit, "SIGKILL", 137
		res.StdoutTruncated, res.StderrTruncated = st.truncated[0], st.truncated[1]
		err = nil
	}
	if err != nil {
		info := policy.Describe(err)
		if !st.started {
			st.started = true
			st.w.Header().Set("Content-Type", "application/x-ndjson")
			if info.Retryable {
				st.w.Header().Set("Retry-After", "1")
			}
			st.w.WriteHeader(statusOf(info))
		}
		s.m.errors.WithLabelValues(info.Class).Inc()
		st.line(errorBody{Error: info, Result: res})
		return
	}
	st.line(map[string]any{"result": res})
}

// killedByDrain turns the cancellation of a run Drain killed into a
// retryable error: the request was fine, the server went away.
func (s *Server) killedByDrain(err error) error {
	if err != nil && s.kill.Err() != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("server: shutting down, the run was killed at the drain deadline (%v): %w", err, policy.ErrUnavailable)
	}
	return err
}
