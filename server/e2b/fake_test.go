package e2b

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fakeBackend is a Backend of host processes in a directory per
// sandbox (its "/workspace"): enough of a live sandbox for the
// protocol's tests, with none of its confinement.
type fakeBackend struct {
	dir string
	mu  sync.Mutex
	n   int
	all []*fakeBox
}

func (b *fakeBackend) NewSandbox(ctx context.Context, cfg SandboxConfig) (Box, error) {
	b.mu.Lock()
	b.n++
	id := fmt.Sprintf("%016x", 0xab0000+b.n)
	b.mu.Unlock()
	dir := filepath.Join(b.dir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	x := &fakeBox{id: id, dir: dir, env: cfg.Env, state: "running", done: make(chan struct{}), procs: map[int]*fakeProc{}}
	x.timer = time.AfterFunc(cfg.Timeout, func() { x.end(errors.New("timeout")) })
	x.expires = time.Now().Add(cfg.Timeout)
	b.mu.Lock()
	b.all = append(b.all, x)
	b.mu.Unlock()
	return x, nil
}

type fakeBox struct {
	id, dir string
	env     map[string]string
	mu      sync.Mutex
	state   string
	expires time.Time
	timer   *time.Timer
	done    chan struct{}
	err     error
	procs   map[int]*fakeProc
}

func (x *fakeBox) ID() string { return x.id }
func (x *fakeBox) State() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.state
}
func (x *fakeBox) ExpiresAt() time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.expires
}
func (x *fakeBox) SetTimeout(d time.Duration) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.timer.Reset(d)
	x.expires = time.Now().Add(d)
	return nil
}
func (x *fakeBox) end(err error) {
	x.mu.Lock()
	if x.state == "closed" {
		x.mu.Unlock()
		return
	}
	x.state, x.err = "closed", err
	ps := x.procs
	x.mu.Unlock()
	for _, p := range ps {
		p.Kill()
	}
	close(x.done)
}
func (x *fakeBox) Close() error          { x.end(errors.New("closed")); return nil }
func (x *fakeBox) Done() <-chan struct{} { return x.done }
func (x *fakeBox) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}
func (x *fakeBox) signalAll(sig syscall.Signal) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, p := range x.procs {
		p.Signal(sig)
	}
}
func (x *fakeBox) Pause() error {
	x.signalAll(syscall.SIGSTOP)
	x.mu.Lock()
	x.state = "paused"
	x.mu.Unlock()
	return nil
}
func (x *fakeBox) Resume() error {
	x.signalAll(syscall.SIGCONT)
	x.mu.Lock()
	x.state = "running"
	x.mu.Unlock()
	return nil
}

// host maps a path inside to the fake's directory.
func (x *fakeBox) host(p string) string {
	if p == "" || p == workspace {
		return x.dir
	}
	if rest, ok := strings.CutPrefix(p, workspace+"/"); ok {
		return filepath.Join(x.dir, rest)
	}
	return p
}

func (x *fakeBox) Exec(ctx context.Context, req ProcRequest) (Proc, error) {
	argv := req.Argv
	if req.Language != "" {
		f, err := os.CreateTemp("", "fake-code-*")
		if err != nil {
			return nil, err
		}
		f.WriteString(req.Code)
		f.Close()
		interp := map[string]string{"python": "python3", "node": "node", "bash": "bash"}[req.Language]
		argv = append([]string{interp, f.Name()}, req.Argv...)
	}
	if req.TTY != nil {
		return nil, errors.New("the fake has no pty")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = x.host(req.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = os.Environ()
	for k, v := range x.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range req.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &fakeProc{req: req, argv: argv, done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	cmd.Stdout = &fakeWriter{p: p, stream: 0}
	cmd.Stderr = &fakeWriter{p: p, stream: 1}
	if req.Stdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		p.stdin = w
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmd = cmd
	x.mu.Lock()
	x.procs[cmd.Process.Pid] = p
	x.mu.Unlock()
	if req.Timeout > 0 {
		time.AfterFunc(req.Timeout, func() {
			p.mu.Lock()
			p.timedOut = true
			p.mu.Unlock()
			p.Kill()
		})
	}
	go func() {
		err := cmd.Wait()
		res := &ProcResult{Status: "ok"}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ws := ee.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				res.Status, res.ExitCode, res.Signal = "signaled", 128+int(ws.Signal()), "SIGKILL"
			} else {
				res.Status, res.ExitCode = "exited", ws.ExitStatus()
			}
		}
		p.mu.Lock()
		if p.timedOut {
			res.Status = "timeout"
		}
		p.res = res
		p.ended = true
		p.cond.Broadcast()
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (x *fakeBox) Processes() []ProcInfo {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []ProcInfo
	for _, p := range x.procs {
		out = append(out, p.Info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

func (x *fakeBox) Process(pid int) Proc {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p := x.procs[pid]; p != nil {
		return p
	}
	return nil
}

func (x *fakeBox) WriteFile(name string, r io.Reader, mode os.FileMode) (int64, error) {
	p := filepath.Join(x.dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(f, r)
}

func (x *fakeBox) OpenFile(name string) (io.ReadSeekCloser, os.FileInfo, error) {
	f, err := os.Open(filepath.Join(x.dir, name))
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func (x *fakeBox) info(rel string, fi os.FileInfo) FileInfo {
	t := "file"
	switch {
	case fi.IsDir():
		t = "dir"
	case fi.Mode()&os.ModeSymlink != 0:
		t = "symlink"
	case !fi.Mode().IsRegular():
		t = "other"
	}
	return FileInfo{Path: rel, Name: fi.Name(), Type: t, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}

func (x *fakeBox) Stat(name string) (FileInfo, error) {
	fi, err := os.Lstat(filepath.Join(x.dir, name))
	if err != nil {
		return FileInfo{}, err
	}
	return x.info(filepath.Clean(name), fi), nil
}

func (x *fakeBox) ListDir(name string, depth int) ([]FileInfo, error) {
	base := filepath.Join(x.dir, name)
	var out []FileInfo
	err := filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p == base {
			return nil
		}
		rel, _ := filepath.Rel(x.dir, p)
		d, _ := filepath.Rel(base, p)
		if strings.Count(d, "/")+1 > depth {
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out = append(out, x.info(rel, fi))
		return nil
	})
	return out, err
}

func (x *fakeBox) MakeDir(name string) (bool, error) {
	p := filepath.Join(x.dir, name)
	if _, err := os.Stat(p); err == nil {
		return false, nil
	}
	return true, os.MkdirAll(p, 0o755)
}

func (x *fakeBox) Rename(from, to string) error {
	return os.Rename(filepath.Join(x.dir, from), filepath.Join(x.dir, to))
}
func (x *fakeBox) Remove(name string) error { return os.RemoveAll(filepath.Join(x.dir, name)) }
func (x *fakeBox) Dial(ctx context.Context, port int) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
}

type fakeProc struct {
	req      ProcRequest
	argv     []string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	mu       sync.Mutex
	cond     *sync.Cond
	out      [2]bytes.Buffer
	ended    bool
	timedOut bool
	res      *ProcResult
	done     chan struct{}
}

type fakeWriter struct {
	p      *fakeProc
	stream int
}

func (w *fakeWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	w.p.out[w.stream].Write(b)
	w.p.cond.Broadcast()
	w.p.mu.Unlock()
	return len(b), nil
}

func (p *fakeProc) PID() int { return p.cmd.Process.Pid }
func (p *fakeProc) Info() ProcInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProcInfo{PID: p.cmd.Process.Pid, Argv: p.argv, Cwd: p.req.Dir, Env: p.req.Env, Tag: p.req.Tag, Running: !p.ended}
}
func (p *fakeProc) Write(b []byte) (int, error) {
	if p.stdin == nil {
		return 0, errors.New("stdin is not open")
	}
	return p.stdin.Write(b)
}
func (p *fakeProc) CloseStdin() error {
	if p.stdin == nil {
		return errors.New("stdin is not open")
	}
	return p.stdin.Close()
}
func (p *fakeProc) Resize(rows, cols uint16) error { return errors.New("no pty") }
func (p *fakeProc) Signal(sig syscall.Signal) error {
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}
func (p *fakeProc) Kill() error { return p.Signal(syscall.SIGKILL) }
func (p *fakeProc) Wait(ctx context.Context) (*ProcResult, error) {
	select {
	case <-p.done:
		return p.res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) Follow(ctx context.Context, so, se int64, fn func(string, []byte) error) error {
	off := [2]int64{so, se}
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	for {
		p.mu.Lock()
		for int64(p.out[0].Len()) == off[0] && int64(p.out[1].Len()) == off[1] && !p.ended && ctx.Err() == nil {
			p.cond.Wait()
		}
		var chunks [2][]byte
		for i := range 2 {
			chunks[i] = append([]byte(nil), p.out[i].Bytes()[off[i]:]...)
			off[i] += int64(len(chunks[i]))
		}
		ended := p.ended
		p.mu.Unlock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for i, name := range []string{"stdout", "stderr"} {
			if len(chunks[i]) > 0 {
				if err := fn(name, chunks[i]); err != nil {
					return err
				}
			}
		}
		if ended && len(chunks[0]) == 0 && len(chunks[1]) == 0 {
			return nil
		}
	}
}
