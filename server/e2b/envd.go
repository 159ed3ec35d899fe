package e2b

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// workspace is where a sandbox's files are, and its processes' default
// working directory: E2B's paths are absolute inside the sandbox, and
// airlock's file API serves those under /workspace (a relative path is
// relative to it, as envd's are to the user's home).
const workspace = "/workspace"

// relPath maps an E2B path to the workspace-relative name the sandbox's
// file operations take.
func relPath(p string) (string, error) {
	if p == "" {
		return "", rpcErr("invalid_argument", "path: required")
	}
	if !path.IsAbs(p) {
		p = workspace + "/" + p
	}
	p = path.Clean(p)
	if p == workspace {
		return ".", nil
	}
	if rest, ok := strings.CutPrefix(p, workspace+"/"); ok {
		return rest, nil
	}
	return "", rpcErr("invalid_argument", "path %q is outside %s: airlock serves a sandbox's files under %s only (its home and working directory); use a path in it, or a relative one", p, workspace, workspace)
}

func absPath(rel string) string {
	if rel == "." || rel == "" {
		return workspace
	}
	return workspace + "/" + rel
}

// fileErr is the Connect error of a file operation's failure.
func fileErr(p string, err error) *rpcError {
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, fs.ErrNotExist):
		return rpcErr("not_found", "%s: no such file or directory", p)
	case errors.Is(err, fs.ErrExist):
		return rpcErr("already_exists", "%s: already exists", p)
	case errors.Is(err, syscall.ENOSPC):
		return rpcErr("resource_exhausted", "%s: the workspace is full", p)
	case errors.Is(err, syscall.ENOTDIR):
		return rpcErr("invalid_argument", "%s: not a directory", p)
	}
	return classErr(p, err)
}

// classErr maps an airlock error's class to a Connect code.
func classErr(what string, err error) *rpcError {
	info := policy.Describe(err)
	code := "internal"
	switch info.Class {
	case policy.ClassInvalid:
		code = "invalid_argument"
	case policy.ClassUnsupported:
		code = "unimplemented"
	case policy.ClassUnavailable:
		code = "unavailable"
	}
	return &rpcError{Code: code, Message: describe(what, info)}
}

// checkUser refuses a user other than the sandbox's own. E2B's "user"
// (the SDKs' default) is the sandbox's one unprivileged user, whatever
// its uid; "root" and others do not exist in an airlock sandbox.
func checkUser(name string) *rpcError {
	if name == "" || name == "user" {
		return nil
	}
	return rpcErr("permission_denied", "user %q: an airlock sandbox runs everything as its one unprivileged user (E2B's \"user\"); no other user, root included, exists in it", name)
}

// basicUser is the user of an "Authorization: Basic base64(user:)".
func basicUser(r *http.Request) (string, *rpcError) {
	a := r.Header.Get("Authorization")
	if a == "" {
		return "", nil
	}
	scheme, cred, _ := strings.Cut(a, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", rpcErr("unauthenticated", "Authorization: only Basic base64(user:) is understood on envd")
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", rpcErr("unauthenticated", "Authorization: Basic credentials are not base64")
	}
	u, _, _ := strings.Cut(string(b), ":")
	return u, nil
}

func (h *Handler) serveEnvd(w http.ResponseWriter, r *http.Request, s *sandbox) {
	switch {
	case r.URL.Path == "/health":
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/files":
		h.serveFiles(w, r, s)
	case strings.HasPrefix(r.URL.Path, "/process.Process/"), strings.HasPrefix(r.URL.Path, "/filesystem.Filesystem/"):
		h.serveRPC(w, r, s)
	default:
		fail(w, http.StatusNotFound, "%s %s is not a route of envd as airlock serves it (/process.Process/*, /filesystem.Filesystem/*, /files, /health)", r.Method, r.URL.Path)
	}
}

// streaming lists the server-streaming methods; every other one is
// unary.
var streaming = map[string]bool{"/process.Process/Start": true, "/process.Process/Connect": true, "/filesystem.Filesystem/WatchDir": true}

func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request, s *sandbox) {
	m := r.URL.Path
	isStream := streaming[m]
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeUnaryError(w, rpcErr("unimplemented", "%s %s: Connect calls are POSTs (GET unary calls are not served)", r.Method, m))
		return
	}
	if m == "/process.Process/StreamInput" {
		writeUnaryError(w, rpcErr("unimplemented", "process.Process/StreamInput (a client stream) is not served: send input with SendInput"))
		return
	}
	if err := checkCodec(r, isStream); err != nil {
		if isStream && strings.Contains(r.Header.Get("Content-Type"), "connect+") {
			newStream(w).End(err)
			return
		}
		writeUnaryError(w, err)
		return
	}
	user, uerr := basicUser(r)
	if uerr == nil {
		uerr = checkUser(user)
	}
	timeout, terr := timeoutOf(r)
	r.Body = http.MaxBytesReader(w, r.Body, maxEnvelope+5)
	var body []byte
	var err error
	if isStream {
		body, _, err = readEnvelope(r.Body)
	} else {
		body, err = io.ReadAll(r.Body)
		if err != nil {
			err = rpcErr("invalid_argument", "the request body: %v", err)
		}
	}
	for _, e := range []error{errOrNil(uerr), terr, err} {
		if e != nil {
			if isStream {
				newStream(w).End(e)
			} else {
				writeUnaryError(w, e)
			}
			return
		}
	}
	if isStream {
		st := newStream(w)
		var err error
		switch m {
		case "/process.Process/Start":
			err = h.procStart(r, s, st, body, timeout)
		case "/process.Process/Connect":
			err = h.procConnect(r, s, st, body, timeout)
		case "/filesystem.Filesystem/WatchDir":
			err = h.watchDir(r, s, st, body, timeout)
		}
		st.End(err)
		return
	}
	var resp any
	switch m {
	case "/process.Process/List":
		resp, err = h.procList(s, body)
	case "/process.Process/SendInput":
		resp, err = h.procInput(s, body)
	case "/process.Process/SendSignal":
		resp, err = h.procSignal(s, body)
	case "/process.Process/CloseStdin":
		resp, err = h.procCloseStdin(s, body)
	case "/process.Process/Update":
		resp, err = h.procUpdate(s, body)
	case "/filesystem.Filesystem/Stat":
		resp, err = h.fsStat(s, body)
	case "/filesystem.Filesystem/MakeDir":
		resp, err = h.fsMakeDir(s, body)
	case "/filesystem.Filesystem/Move":
		resp, err = h.fsMove(s, body)
	case "/filesystem.Filesystem/ListDir":
		resp, err = h.fsListDir(s, body)
	case "/filesystem.Filesystem/Remove":
		resp, err = h.fsRemove(s, body)
	default:
		err = rpcErr("unimplemented", "%s is not served (process.Process: Start, Connect, List, SendInput, SendSignal, CloseStdin, Update; filesystem.Filesystem: Stat, MakeDir, Move, ListDir, Remove, WatchDir)", strings.TrimPrefix(m, "/"))
	}
	if err != nil {
		writeUnaryError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// errOrNil keeps a nil *rpcError a nil error.
func errOrNil(e *rpcError) error {
	if e == nil {
		return nil
	}
	return e
}

// The process.Process messages (spec/envd/process/process.proto), in
// protobuf's JSON mapping.

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type ptySize struct {
	Cols uint32 `json:"cols"`
	Rows uint32 `json:"rows"`
}

type ptyMsg struct {
	Size *ptySize `json:"size"`
}

type startRequest struct {
	Process *processConfig `json:"process"`
	Pty     *ptyMsg        `json:"pty"`
	Tag     *string        `json:"tag"`
	Stdin   *bool          `json:"stdin"`
}

type selector struct {
	Pid *uint32 `json:"pid"`
	Tag *string `json:"tag"`
}

type selectorRequest struct {
	Process *selector `json:"process"`
}

type processInput struct {
	Stdin []byte `json:"stdin"`
	Pty   []byte `json:"pty"`
}

type sendInputRequest struct {
	Process *selector     `json:"process"`
	Input   *processInput `json:"input"`
}

type sendSignalRequest struct {
	Process *selector       `json:"process"`
	Signal  json.RawMessage `json:"signal"`
}

type updateRequest struct {
	Process *selector `json:"process"`
	Pty     *ptyMsg   `json:"pty"`
}

type processInfo struct {
	Config processConfig `json:"config"`
	Pid    int           `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

type startEvent struct {
	Pid int `json:"pid"`
}

type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Pty    []byte `json:"pty,omitempty"`
}

type endEvent struct {
	ExitCode int     `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

type eventResponse struct {
	Event processEvent `json:"event"`
}

// find resolves a selector to a running process of s.
func find(s *sandbox, sel *selector) (Proc, error) {
	switch {
	case sel == nil || (sel.Pid == nil && sel.Tag == nil):
		return nil, rpcErr("invalid_argument", "process: a selector (pid or tag) is required")
	case sel.Pid != nil:
		if p := s.box.Process(int(*sel.Pid)); p != nil {
			return p, nil
		}
		return nil, rpcErr("not_found", "process with pid %d not found", *sel.Pid)
	}
	for _, in := range s.box.Processes() {
		if in.Tag == *sel.Tag && in.Running {
			if p := s.box.Process(in.PID); p != nil {
				return p, nil
			}
		}
	}
	return nil, rpcErr("not_found", "process with tag %q not found", *sel.Tag)
}

func (h *Handler) procStart(r *http.Request, s *sandbox, st *stream, body []byte, timeout time.Duration) error {
	var req startRequest
	if err := decodeMessage(body, &req); err != nil {
		return err
	}
	if req.Process == nil || req.Process.Cmd == "" {
		return rpcErr("invalid_argument", "process.cmd: required")
	}
	pr := ProcRequest{Argv: append([]string{req.Process.Cmd}, req.Process.Args...), Env: req.Process.Envs, Timeout: timeout,
		Stdin: req.Stdin != nil && *req.Stdin}
	if req.Process.Cwd != nil {
		pr.Dir = *req.Process.Cwd
	}
	if req.Tag != nil {
		pr.Tag = *req.Tag
	}
	if req.Pty != nil {
		if req.Pty.Size == nil || req.Pty.Size.Rows == 0 || req.Pty.Size.Cols == 0 || req.Pty.Size.Rows > 0xffff || req.Pty.Size.Cols > 0xffff {
			return rpcErr("invalid_argument", "pty.size: rows and cols, 1 to 65535, are required")
		}
		pr.TTY = &TTYSize{Rows: uint16(req.Pty.Size.Rows), Cols: uint16(req.Pty.Size.Cols)}
		pr.Stdin = true
	}
	// The process outlives this call (a background command's client
	// disconnects): only its start is bound to the request.
	p, err := s.exec(context.WithoutCancel(r.Context()), pr)
	if err != nil {
		return classErr("start", err)
	}
	if err := st.Send(eventResponse{Event: processEvent{Start: &startEvent{Pid: p.PID()}}}); err != nil {
		return nil
	}
	return h.follow(r.Context(), st, p, pr.TTY != nil, keepaliveInterval(r))
}

func (h *Handler) procConnect(r *http.Request, s *sandbox, st *stream, body []byte, timeout time.Duration) error {
	var req selectorRequest
	if err := decodeMessage(body, &req); err != nil {
		return err
	}
	p, err := find(s, req.Process)
	if err != nil {
		return err
	}
	if err := st.Send(eventResponse{Event: processEvent{Start: &startEvent{Pid: p.PID()}}}); err != nil {
		return nil
	}
	ctx, cancel := withTimeout(r.Context(), timeout)
	defer cancel()
	err = h.follow(ctx, st, p, p.Info().TTY, keepaliveInterval(r))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return rpcErr("deadline_exceeded", "the connection reached its timeout (%v); the process goes on", timeout)
	}
	return err
}

// follow streams p's output (from its first byte: a Connect replays what
// the process's buffer still holds), keepalives, and its end.
func (h *Handler) follow(ctx context.Context, st *stream, p Proc, tty bool, keep time.Duration) error {
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(keep)
		defer t.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-t.C:
				if st.Send(eventResponse{Event: processEvent{Keepalive: &struct{}{}}}) != nil {
					stop()
					return
				}
			}
		}
	}()
	err := p.Follow(fctx, 0, 0, func(stream string, data []byte) error {
		d := &dataEvent{}
		switch {
		case tty:
			d.Pty = data
		case stream == "stderr":
			d.Stderr = data
		default:
			d.Stdout = data
		}
		return st.Send(eventResponse{Event: processEvent{Data: d}})
	})
	if err != nil || fctx.Err() != nil {
		return nil // the client went away (or the stream's deadline): the process goes on
	}
	res, err := p.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return classErr("wait", err)
	}
	if res.Status == "timeout" {
		return rpcErr("deadline_exceeded", "the command ran past its timeout and was killed (exit code %d)", res.ExitCode)
	}
	st.Send(eventResponse{Event: processEvent{End: endOf(res)}})
	return nil
}

// endOf is a result as envd's end event: exited says it exited (not a
// signal), status reads as Go's ProcessState does, error says why a
// command failed.
func endOf(res *ProcResult) *endEvent {
	e := &endEvent{ExitCode: res.ExitCode}
	switch res.Status {
	case "ok", "exited":
		e.Exited = true
		e.Status = "exit status " + strconv.Itoa(res.ExitCode)
	default:
		sig := strings.ToLower(strings.TrimPrefix(res.Signal, "SIG"))
		if sig == "" {
			sig = "killed"
		}
		e.Status = "signal: " + sig
	}
	if res.Status != "ok" {
		msg := e.Status
		if res.Status != "exited" && res.Status != "signaled" {
			msg += " (" + res.Status + ")"
		}
		if res.Error != "" {
			msg += ": " + res.Error
		}
		e.Error = &msg
	}
	return e
}

func (h *Handler) procList(s *sandbox, body []byte) (any, error) {
	var req struct{}
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	out := []processInfo{}
	for _, in := range s.box.Processes() {
		if !in.Running || in.Tag == interpreterTag {
			continue
		}
		pi := processInfo{Pid: in.PID, Config: processConfig{Envs: in.Env}}
		if len(in.Argv) > 0 {
			pi.Config.Cmd, pi.Config.Args = in.Argv[0], in.Argv[1:]
		}
		if in.Cwd != "" {
			cwd := in.Cwd
			pi.Config.Cwd = &cwd
		}
		if in.Tag != "" {
			tag := in.Tag
			pi.Tag = &tag
		}
		out = append(out, pi)
	}
	return struct {
		Processes []processInfo `json:"processes"`
	}{out}, nil
}

func (h *Handler) procInput(s *sandbox, body []byte) (any, error) {
	var req sendInputRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	p, err := find(s, req.Process)
	if err != nil {
		return nil, err
	}
	if req.Input == nil {
		return nil, rpcErr("invalid_argument", "input: stdin or pty is required")
	}
	data := req.Input.Stdin
	if req.Input.Pty != nil {
		data = req.Input.Pty
	}
	if _, err := p.Write(data); err != nil {
		return nil, classErr("stdin", err)
	}
	return struct{}{}, nil
}

// signalOf reads a Signal enum (its name, or its number).
func signalOf(raw json.RawMessage) (syscall.Signal, error) {
	var name string
	var num int
	switch {
	case json.Unmarshal(raw, &name) == nil:
	case json.Unmarshal(raw, &num) == nil:
		name = map[int]string{9: "SIGNAL_SIGKILL", 15: "SIGNAL_SIGTERM"}[num]
	}
	switch name {
	case "SIGNAL_SIGKILL":
		return syscall.SIGKILL, nil
	case "SIGNAL_SIGTERM":
		return syscall.SIGTERM, nil
	}
	return 0, rpcErr("invalid_argument", "signal %s: want SIGNAL_SIGKILL or SIGNAL_SIGTERM", string(raw))
}

func (h *Handler) procSignal(s *sandbox, body []byte) (any, error) {
	var req sendSignalRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	sig, err := signalOf(req.Signal)
	if err != nil {
		return nil, err
	}
	p, err := find(s, req.Process)
	if err != nil {
		return nil, err
	}
	if err := p.Signal(sig); err != nil {
		return nil, classErr("signal", err)
	}
	return struct{}{}, nil
}

func (h *Handler) procCloseStdin(s *sandbox, body []byte) (any, error) {
	var req selectorRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	p, err := find(s, req.Process)
	if err != nil {
		return nil, err
	}
	if err := p.CloseStdin(); err != nil {
		return nil, classErr("close stdin", err)
	}
	return struct{}{}, nil
}

func (h *Handler) procUpdate(s *sandbox, body []byte) (any, error) {
	var req updateRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	p, err := find(s, req.Process)
	if err != nil {
		return nil, err
	}
	if req.Pty == nil || req.Pty.Size == nil || req.Pty.Size.Rows == 0 || req.Pty.Size.Cols == 0 || req.Pty.Size.Rows > 0xffff || req.Pty.Size.Cols > 0xffff {
		return nil, rpcErr("invalid_argument", "pty.size: rows and cols, 1 to 65535, are required (Update changes a pty's size only)")
	}
	if err := p.Resize(uint16(req.Pty.Size.Rows), uint16(req.Pty.Size.Cols)); err != nil {
		return nil, classErr("resize", err)
	}
	return struct{}{}, nil
}

// The filesystem.Filesystem messages (spec/envd/filesystem/filesystem.proto).

type entryInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Path          string   `json:"path"`
	Size          int64s   `json:"size"`
	Mode          uint32   `json:"mode"`
	Permissions   string   `json:"permissions"`
	Owner         string   `json:"owner"`
	Group         string   `json:"group"`
	ModifiedTime  string   `json:"modifiedTime,omitempty"`
	SymlinkTarget *string  `json:"symlinkTarget,omitempty"`
	Metadata      struct{} `json:"metadata"`
}

func entryOf(fi FileInfo) entryInfo {
	e := entryInfo{Name: fi.Name, Path: absPath(fi.Path), Size: int64s(fi.Size), Mode: uint32(fi.Mode.Perm()),
		Permissions: fi.Mode.String(), Owner: "user", Group: "user"}
	switch fi.Type {
	case "file":
		e.Type = "FILE_TYPE_FILE"
	case "dir":
		e.Type = "FILE_TYPE_DIRECTORY"
	case "symlink":
		e.Type = "FILE_TYPE_SYMLINK"
		t := fi.Target
		e.SymlinkTarget = &t
	default:
		e.Type = "FILE_TYPE_UNSPECIFIED"
	}
	if e.Name == "" {
		e.Name = path.Base(e.Path)
	}
	if !fi.ModTime.IsZero() {
		e.ModifiedTime = fi.ModTime.UTC().Format(time.RFC3339Nano)
	}
	return e
}

type pathRequest struct {
	Path string `json:"path"`
}

type entryResponse struct {
	Entry entryInfo `json:"entry"`
}

func (h *Handler) fsStat(s *sandbox, body []byte) (any, error) {
	var req pathRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	rel, err := relPath(req.Path)
	if err != nil {
		return nil, err
	}
	fi, err := s.box.Stat(rel)
	if err != nil {
		return nil, fileErr(req.Path, err)
	}
	return entryResponse{entryOf(fi)}, nil
}

func (h *Handler) fsMakeDir(s *sandbox, body []byte) (any, error) {
	var req pathRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	rel, err := relPath(req.Path)
	if err != nil {
		return nil, err
	}
	created, err := s.box.MakeDir(rel)
	if err != nil {
		return nil, fileErr(req.Path, err)
	}
	if !created {
		return nil, rpcErr("already_exists", "%s: already exists", req.Path)
	}
	fi, err := s.box.Stat(rel)
	if err != nil {
		return nil, fileErr(req.Path, err)
	}
	return entryResponse{entryOf(fi)}, nil
}

func (h *Handler) fsMove(s *sandbox, body []byte) (any, error) {
	var req struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	from, err := relPath(req.Source)
	if err != nil {
		return nil, err
	}
	to, err := relPath(req.Destination)
	if err != nil {
		return nil, err
	}
	if err := s.box.Rename(from, to); err != nil {
		return nil, fileErr(req.Source, err)
	}
	fi, err := s.box.Stat(to)
	if err != nil {
		return nil, fileErr(req.Destination, err)
	}
	return entryResponse{entryOf(fi)}, nil
}

func (h *Handler) fsListDir(s *sandbox, body []byte) (any, error) {
	var req struct {
		Path  string `json:"path"`
		Depth uint32 `json:"depth"`
	}
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	rel, err := relPath(req.Path)
	if err != nil {
		return nil, err
	}
	depth := int(req.Depth)
	if depth < 1 {
		depth = 1
	}
	if fi, err := s.box.Stat(rel); err != nil {
		return nil, fileErr(req.Path, err)
	} else if fi.Type != "dir" {
		return nil, rpcErr("invalid_argument", "%s: not a directory", req.Path)
	}
	list, err := s.box.ListDir(rel, depth)
	if err != nil {
		return nil, fileErr(req.Path, err)
	}
	out := []entryInfo{}
	for _, fi := range list {
		out = append(out, entryOf(fi))
	}
	return struct {
		Entries []entryInfo `json:"entries"`
	}{out}, nil
}

func (h *Handler) fsRemove(s *sandbox, body []byte) (any, error) {
	var req pathRequest
	if err := decodeMessage(body, &req); err != nil {
		return nil, err
	}
	rel, err := relPath(req.Path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, rpcErr("invalid_argument", "%s is the workspace itself: remove what is in it", workspace)
	}
	if _, err := s.box.Stat(rel); err != nil {
		return nil, fileErr(req.Path, err)
	}
	if err := s.box.Remove(rel); err != nil {
		return nil, fileErr(req.Path, err)
	}
	return struct{}{}, nil
}

// HTTP /files: GET downloads (Range served), POST uploads as multipart
// (each part "file", its filename the path when the query names none) or
// as the raw body (octet-stream, optionally gzip-encoded).

type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

func (h *Handler) serveFiles(w http.ResponseWriter, r *http.Request, s *sandbox) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "path", "username":
		case "signature", "signature_expiration":
			fail(w, http.StatusBadRequest, "signed URLs (%s) are not supported: send the sandbox's X-Access-Token", k)
			return
		default:
			fail(w, http.StatusBadRequest, "query %q is not supported (path, username are)", k)
			return
		}
	}
	if err := checkUser(q.Get("username")); err != nil {
		fail(w, http.StatusUnauthorized, "%s", err.Message)
		return
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-metadata-") {
			fail(w, http.StatusBadRequest, "%s: file metadata (extended attributes) is not supported", k)
			return
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.download(w, r, s, q.Get("path"))
	case http.MethodPost:
		h.upload(w, r, s, q.Get("path"))
	default:
		methodNotAllowed(w, r, "GET, POST")
	}
}

// fileStatus is the HTTP status of a file operation's error.
func fileStatus(re *rpcError) int {
	switch re.Code {
	case "resource_exhausted":
		return http.StatusInsufficientStorage
	}
	return httpStatus(re.Code)
}

func (h *Handler) download(w http.ResponseWriter, r *http.Request, s *sandbox, p string) {
	rel, err := relPath(p)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", asRPC(err).Message)
		return
	}
	f, fi, err := s.box.OpenFile(rel)
	if err != nil {
		re := fileErr(p, err)
		fail(w, fileStatus(re), "%s", re.Message)
		return
	}
	defer f.Close()
	if fi.IsDir() {
		fail(w, http.StatusBadRequest, "%s is a directory", p)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": path.Base(rel)}))
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

func (h *Handler) upload(w http.ResponseWriter, r *http.Request, s *sandbox, p string) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var out []writeInfo
	put := func(name string, body io.Reader) bool {
		rel, err := relPath(name)
		if err != nil {
			fail(w, http.StatusBadRequest, "%s", asRPC(err).Message)
			return false
		}
		if _, err := s.box.WriteFile(rel, body, 0o644); err != nil {
			re := fileErr(name, err)
			fail(w, fileStatus(re), "%s", re.Message)
			return false
		}
		out = append(out, writeInfo{Name: path.Base(absPath(rel)), Type: "file", Path: absPath(rel)})
		return true
	}
	switch ct {
	case "multipart/form-data":
		if r.Header.Get("Content-Encoding") != "" {
			fail(w, http.StatusBadRequest, "Content-Encoding on a multipart upload is not supported")
			return
		}
		mr := multipart.NewReader(r.Body, params["boundary"])
		n := 0
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				fail(w, http.StatusBadRequest, "the multipart body: %v", err)
				return
			}
			if part.FormName() != "file" {
				fail(w, http.StatusBadRequest, "multipart field %q: only \"file\" parts are taken", part.FormName())
				return
			}
			n++
			// The filename is the path (part.FileName would keep only
			// its last element).
			_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			name := dp["filename"]
			if p != "" {
				if n > 1 {
					fail(w, http.StatusBadRequest, "path names one file, and the body holds more: leave path out and name each part's filename")
					return
				}
				name = p
			}
			if !put(name, part) {
				return
			}
		}
		if n == 0 {
			fail(w, http.StatusBadRequest, "no \"file\" part in the multipart body")
			return
		}
	case "application/octet-stream":
		if p == "" {
			fail(w, http.StatusBadRequest, "path: required with an octet-stream body")
			return
		}
		var body io.Reader = r.Body
		switch enc := r.Header.Get("Content-Encoding"); enc {
		case "", "identity":
		case "gzip":
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				fail(w, http.StatusBadRequest, "the gzip body: %v", err)
				return
			}
			defer zr.Close()
			body = zr
		default:
			fail(w, http.StatusBadRequest, "Content-Encoding %q: gzip or none", enc)
			return
		}
		if !put(p, body) {
			return
		}
	default:
		fail(w, http.StatusBadRequest, "Content-Type %q: send multipart/form-data or application/octet-stream", ct)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
