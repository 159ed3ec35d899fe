package e2b

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// The few live-sandbox operations the protocol stands on, behind
// interfaces of this package so that the handlers run against the
// executor's live sandboxes (live.go) and against the tests' fake alike.
// The types mirror executor.SandboxConfig, ProcessRequest, ProcessInfo
// and FileInfo field for field, with only what E2B's protocol carries.

// Backend makes live sandboxes.
type Backend interface {
	NewSandbox(ctx context.Context, cfg SandboxConfig) (Box, error)
}

// SandboxConfig is what a create asks of a sandbox.
type SandboxConfig struct {
	Policy   policy.Policy
	Env      map[string]string
	Timeout  time.Duration // lifetime from creation
	Metadata map[string]string
}

// Box is one live sandbox.
type Box interface {
	ID() string
	State() string // "running", "paused" or "closed"
	ExpiresAt() time.Time
	SetTimeout(d time.Duration) error
	Close() error
	Done() <-chan struct{}
	Err() error
	Pause() error
	Resume() error

	Exec(ctx context.Context, req ProcRequest) (Proc, error)
	Processes() []ProcInfo
	Process(pid int) Proc

	WriteFile(name string, r io.Reader, mode os.FileMode) (int64, error)
	OpenFile(name string) (io.ReadSeekCloser, os.FileInfo, error)
	Stat(name string) (FileInfo, error)
	ListDir(name string, depth int) ([]FileInfo, error)
	MakeDir(name string) (bool, error)
	Rename(from, to string) error
	Remove(name string) error

	Dial(ctx context.Context, port int) (net.Conn, error)
}

// ProcRequest starts a process (executor.ProcessRequest).
type ProcRequest struct {
	Argv     []string
	Env      map[string]string
	Dir      string // "" = /workspace
	Stdin    bool
	TTY      *TTYSize
	Timeout  time.Duration // 0 = none
	Tag      string
	Language string // with Code: a program the executor writes outside /workspace
	Code     string
}

// TTYSize is a pty's size.
type TTYSize struct{ Rows, Cols uint16 }

// ProcInfo describes a process (executor.ProcessInfo).
type ProcInfo struct {
	PID     int
	Argv    []string
	Cwd     string
	Env     map[string]string
	Tag     string
	TTY     bool
	Running bool
}

// ProcResult is how a process ended.
type ProcResult struct {
	ExitCode int
	Status   string // the run contract's status: ok, exited, signaled, timeout, ...
	Signal   string // the signal's name when one ended it
	Error    string // the classified error's message, when there is one
}

// Proc is one process of a Box (executor.Process).
type Proc interface {
	PID() int
	Info() ProcInfo
	Write(b []byte) (int, error)
	CloseStdin() error
	Resize(rows, cols uint16) error
	Signal(sig syscall.Signal) error
	Kill() error
	Wait(ctx context.Context) (*ProcResult, error)
	Done() <-chan struct{}
	Follow(ctx context.Context, stdoutOff, stderrOff int64, fn func(stream string, data []byte) error) error
}

// FileInfo describes a workspace entry (executor.FileInfo).
type FileInfo struct {
	Path    string // relative to /workspace
	Name    string
	Type    string // "file", "dir", "symlink", "other"
	Size    int64
	Mode    os.FileMode
	ModTime time.Time
	Target  string
}
