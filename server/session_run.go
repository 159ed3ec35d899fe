package server

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// SessionResult is the result of a session's run or exec: a run's
// Result, the pid its process had in the session's sandbox, and, when
// it returns the workspace's files (exec), how many entries the
// workspace held and how many of them the result leaves out (its caps:
// executor.FileLimits' defaults).
type SessionResult struct {
	executor.Result
	PID          int  `json:"pid,omitempty"`
	FilesTotal   *int `json:"files_total,omitempty"`
	FilesOmitted *int `json:"files_omitted,omitempty"`
}

// serveSession runs req in se under a run slot and writes its result:
// one JSON object, or an NDJSON stream.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request, se *session, req executor.Request) {
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
		st = &stream{w: w, rc: http.NewResponseController(w), limit: int64(se.info.Policy.MaxOutput), cancel: cancel, start: time.Now(), lang: req.Language}
		req.Stdout, req.Stderr = st.writer(0), st.writer(1)
	}
	res, err := s.runSession(ctx, se, req, 0)
	if st != nil {
		var er *executor.Result
		if res != nil {
			er = &res.Result
		}
		st.finish(er, err, s)
		return
	}
	if err != nil {
		var er *executor.Result
		if res != nil {
			er = &res.Result
		}
		s.fail(w, 0, err, er)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// runSession runs req as a foreground process of se's sandbox: its
// files (and input) written first, its code (Language, Code) put by the
// library outside /workspace, killed past timeout (0: the session's
// policy's timeout) or when ctx ends (status cancelled), its output
// captured or passed to req.Stdout and req.Stderr as it comes, and the
// workspace's files returned when req.CollectFiles. What it leaves in
// the background lives on in the sandbox. The run is counted in the
// metrics as kind "session".
func (s *Server) runSession(ctx context.Context, se *session, req executor.Request, timeout time.Duration) (*SessionResult, error) {
	start := time.Now()
	res, err := s.runProcess(ctx, se, req, timeout)
	err = s.killedByDrain(err)
	var er *executor.Result
	if res != nil {
		er = &res.Result
	}
	s.m.observe("session", er, err, time.Since(start))
	return res, err
}

func (s *Server) runProcess(ctx context.Context, se *session, req executor.Request, timeout time.Duration) (*SessionResult, error) {
	if timeout <= 0 {
		timeout = time.Duration(se.info.Policy.Timeout)
	}
	pr := executor.ProcessRequest{Argv: req.Args, Timeout: timeout}
	if req.Language != "" {
		pr = executor.ProcessRequest{Language: req.Language, Code: req.Code, Argv: req.Argv, Timeout: timeout}
	}
	skip := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(req.Files)) {
		if _, err := se.sb.WriteFile(name, bytes.NewReader(req.Files[name]), 0o644); err != nil {
			return nil, fileError(se, name, err)
		}
		skip[name] = true
	}
	if len(req.Input) > 0 {
		// As a one-shot exec has it: /workspace/input.json, named by
		// $AIRLOCK_INPUT (the caller asked for that file).
		if _, err := se.sb.WriteFile("input.json", bytes.NewReader(req.Input), 0o644); err != nil {
			return nil, fileError(se, "input.json", err)
		}
		skip["input.json"] = true
		pr.Env = map[string]string{"AIRLOCK_INPUT": "/workspace/input.json"}
	}
	var stdin []byte
	if req.Stdin != nil {
		var err error
		if stdin, err = io.ReadAll(req.Stdin); err != nil {
			return nil, policy.Invalid("stdin", "reading it: %v", err)
		}
	}
	var r *executor.ProcessResult
	var err error
	if req.Stdout == nil {
		// Captured: the library's foreground run (the first MaxOutput
		// bytes of each stream kept, past them killed: output_limit; the
		// context's end kills it: cancelled).
		if len(stdin) == 0 {
			stdin = nil
		}
		r, err = se.sb.Run(ctx, pr, stdin)
	} else {
		r, err = streamProcess(ctx, se.sb, pr, stdin, req.Stdout, req.Stderr)
	}
	if err != nil {
		return nil, err
	}
	streamed := req.Stdout != nil
	res := &SessionResult{Result: executor.Result{Result: r.Result, Language: req.Language}, PID: r.PID}
	if streamed {
		res.Stdout, res.Stderr, res.StdoutEncoding, res.StderrEncoding = "", "", "", ""
	}
	if req.CollectFiles {
		l, err := se.sb.Files(req.FileLimits)
		if err != nil {
			return res, err
		}
		total, omitted := l.Total, l.Omitted
		for _, f := range l.Files {
			if skip[f.Path] {
				total--
				continue
			}
			res.Files = append(res.Files, f)
		}
		res.FilesTotal, res.FilesOmitted = &total, &omitted
	}
	return res, nil
}

// fileError is err of writing name in se's workspace, classified: the
// workspace's limit is named as such.
func fileError(se *session, name string, err error) error {
	if noSpace(err) {
		return workspaceFull(se, name)
	}
	return err
}

// streamProcess runs pr in sb, passing its output to stdout and stderr
// as it comes (the caller caps them: past its cap it cancels ctx), and
// waits for its end. The context's end kills it: status cancelled.
func streamProcess(ctx context.Context, sb *executor.Sandbox, pr executor.ProcessRequest, stdin []byte, stdout, stderr io.Writer) (*executor.ProcessResult, error) {
	pr.Stdin = len(stdin) > 0
	p, err := sb.Exec(ctx, pr)
	if err != nil {
		return nil, err
	}
	if pr.Stdin {
		go func() {
			// A program that never reads its stdin must not hold the
			// call: the write ends with the process.
			p.Write(stdin)
			p.CloseStdin()
		}()
	}
	relay := follow(ctx, p, stdout, stderr)
	var r *executor.ProcessResult
	select {
	case <-p.Done():
		r, _ = p.Wait(context.WithoutCancel(ctx)) // done: at once
	case <-ctx.Done():
		p.Kill()
		r, _ = p.Wait(context.WithoutCancel(ctx))
		if r != nil && r.Status == nsjail.StatusSignaled {
			r.Status = nsjail.StatusCancelled // our kill, as Run says it
		}
	}
	relay()
	return r, nil
}

// follow passes p's output to stdout and stderr as it comes, until the
// returned function is called (once p ended): it stops following and
// passes on what is left in p's buffers. It does not wait for the
// streams to end: a process left in the background by p may hold them
// open for as long as it lives.
func follow(ctx context.Context, p *executor.Process, stdout, stderr io.Writer) func() {
	var offs [2]int64 // written by Follow's goroutine, read after it ended
	w := func(stream string) (io.Writer, *int64) {
		if stream == "stderr" {
			return stderr, &offs[1]
		}
		return stdout, &offs[0]
	}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Follow(fctx, 0, 0, func(stream string, data []byte) error {
			out, off := w(stream)
			out.Write(data)
			*off += int64(len(data))
			return nil
		})
	}()
	return func() {
		cancel()
		<-done
		for _, stream := range []string{"stdout", "stderr"} {
			out, off := w(stream)
			if data, _, _, _ := p.Output(stream, *off); len(data) > 0 {
				out.Write(data)
			}
		}
	}
}
