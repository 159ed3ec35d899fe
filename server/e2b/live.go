package e2b

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// Live is the Backend of an executor's live sandboxes, each running at
// most maxProcs processes at once (executor.SandboxConfig.MaxProcesses;
// 0: no bound beyond the policy's pids limit).
func Live(ex *executor.Executor, maxProcs int) Backend { return liveBackend{ex, maxProcs} }

type liveBackend struct {
	ex       *executor.Executor
	maxProcs int
}

func (b liveBackend) NewSandbox(ctx context.Context, cfg SandboxConfig) (Box, error) {
	// E2B's sandboxes end at their timeout, not when idle.
	sb, err := b.ex.NewSandbox(ctx, executor.SandboxConfig{Policy: cfg.Policy, Env: cfg.Env, Timeout: cfg.Timeout, IdleTimeout: -1, Metadata: cfg.Metadata, MaxProcesses: b.maxProcs})
	if err != nil {
		return nil, err
	}
	return liveBox{sb}, nil
}

type liveBox struct{ s *executor.Sandbox }

func (x liveBox) ID() string                       { return x.s.ID() }
func (x liveBox) State() string                    { return x.s.Info().State }
func (x liveBox) ExpiresAt() time.Time             { return x.s.Info().ExpiresAt }
func (x liveBox) SetTimeout(d time.Duration) error { return x.s.SetTimeout(d) }
func (x liveBox) Close() error                     { return x.s.Close() }
func (x liveBox) Done() <-chan struct{}            { return x.s.Done() }
func (x liveBox) Err() error                       { return x.s.Err() }
func (x liveBox) Pause() error                     { return x.s.Pause() }
func (x liveBox) Resume() error                    { return x.s.Resume() }

func (x liveBox) Exec(ctx context.Context, req ProcRequest) (Proc, error) {
	pr := executor.ProcessRequest{Argv: req.Argv, Env: req.Env, Dir: req.Dir, Stdin: req.Stdin, Timeout: req.Timeout, Tag: req.Tag,
		Language: req.Language, Code: req.Code}
	if req.TTY != nil {
		pr.TTY = &executor.TTYSize{Rows: req.TTY.Rows, Cols: req.TTY.Cols}
	}
	p, err := x.s.Exec(ctx, pr)
	if err != nil {
		return nil, err
	}
	return liveProc{p}, nil
}

func procInfo(in executor.ProcessInfo) ProcInfo {
	return ProcInfo{PID: in.PID, Argv: in.Argv, Cwd: in.Cwd, Env: in.Env, Tag: in.Tag, TTY: in.TTY, Running: in.State == "running"}
}

func (x liveBox) Processes() []ProcInfo {
	var out []ProcInfo
	for _, in := range x.s.Processes() {
		out = append(out, procInfo(in))
	}
	return out
}

func (x liveBox) Process(pid int) Proc {
	if p := x.s.Process(pid); p != nil {
		return liveProc{p}
	}
	return nil
}

func (x liveBox) WriteFile(name string, r io.Reader, mode os.FileMode) (int64, error) {
	return x.s.WriteFile(name, r, mode)
}
func (x liveBox) OpenFile(name string) (io.ReadSeekCloser, os.FileInfo, error) {
	return x.s.OpenFile(name)
}
func fileInfo(fi executor.FileInfo) FileInfo {
	return FileInfo{Path: fi.Path, Name: fi.Name, Type: fi.Type, Size: fi.Size, Mode: fi.Mode, ModTime: fi.ModTime, Target: fi.Target}
}
func (x liveBox) Stat(name string) (FileInfo, error) {
	fi, err := x.s.Stat(name)
	return fileInfo(fi), err
}
func (x liveBox) ListDir(name string, depth int) ([]FileInfo, error) {
	list, err := x.s.ListDir(name, depth)
	out := make([]FileInfo, len(list))
	for i, fi := range list {
		out[i] = fileInfo(fi)
	}
	return out, err
}
func (x liveBox) MakeDir(name string) (bool, error)                    { return x.s.MakeDir(name) }
func (x liveBox) Rename(from, to string) error                         { return x.s.Rename(from, to) }
func (x liveBox) Remove(name string) error                             { return x.s.Remove(name) }
func (x liveBox) Dial(ctx context.Context, port int) (net.Conn, error) { return x.s.Dial(ctx, port) }

type liveProc struct{ p *executor.Process }

func (l liveProc) PID() int                        { return l.p.PID() }
func (l liveProc) Info() ProcInfo                  { return procInfo(l.p.Info()) }
func (l liveProc) Write(b []byte) (int, error)     { return l.p.Write(b) }
func (l liveProc) CloseStdin() error               { return l.p.CloseStdin() }
func (l liveProc) Resize(rows, cols uint16) error  { return l.p.Resize(rows, cols) }
func (l liveProc) Signal(sig syscall.Signal) error { return l.p.Signal(sig) }
func (l liveProc) Kill() error                     { return l.p.Kill() }
func (l liveProc) Done() <-chan struct{}           { return l.p.Done() }

// Follow is executor.Process.Follow: it ends once the process has
// ended and both streams are delivered to their end.
func (l liveProc) Follow(ctx context.Context, so, se int64, fn func(string, []byte) error) error {
	return l.p.Follow(ctx, so, se, fn)
}

func (l liveProc) Wait(ctx context.Context) (*ProcResult, error) {
	res, err := l.p.Wait(ctx)
	if err != nil {
		return nil, err
	}
	out := &ProcResult{ExitCode: res.ExitCode, Status: string(res.Status), Signal: res.Signal}
	if res.Error != nil {
		out.Error = res.Error.Message
	}
	return out, nil
}
