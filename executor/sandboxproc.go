package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// ProcessRequest is one process to run in a live sandbox.
type ProcessRequest struct {
	// Exactly one of Argv, Command (a shell command line: /bin/sh -c),
	// or Language with Code (the source, written to a file of its own
	// under /tmp/.airlock, never into /workspace; Argv are then the
	// program's arguments).
	Argv     []string
	Command  string
	Language string
	Code     string
	// Env is added to the sandbox's environment for this process.
	Env map[string]string
	// Dir is the working directory inside. "" = /workspace.
	Dir string
	// Stdin keeps the process's stdin open as a stream (Write,
	// CloseStdin); false = /dev/null.
	Stdin bool
	// TTY runs the process on a pty of this size: its stdin, stdout and
	// stderr, its controlling terminal. All output is "stdout".
	TTY *TTYSize
	// Timeout kills the process's group after this long. 0 = none for
	// Exec; for Run, the policy's timeout.
	Timeout time.Duration
	// Tag is opaque, returned in ProcessInfo.
	Tag string
}

// TTYSize is a terminal's size.
type TTYSize struct{ Rows, Cols uint16 }

// ProcessInfo describes a process of a live sandbox.
type ProcessInfo struct {
	PID       int               `json:"pid"`
	Argv      []string          `json:"argv"`
	Command   string            `json:"command,omitempty"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env,omitempty"`
	Tag       string            `json:"tag,omitempty"`
	TTY       bool              `json:"tty"`
	State     string            `json:"state"` // running | exited
	StartedAt time.Time         `json:"started_at"`
	ExitCode  *int              `json:"exit_code,omitempty"`
	Status    string            `json:"status,omitempty"`
}

// ProcessResult is one process's outcome, in the run Result's form.
type ProcessResult struct {
	nsjail.Result
	PID int `json:"pid"`
}

// Process is a process of a live sandbox.
type Process struct {
	s         *Sandbox
	lp        *nsjail.LiveProcess
	info      ProcessInfo
	stdin     *os.File // the write end of stdin, or the pty's master; nil once closed
	pty       *os.File
	out, errs *streamBuf
	limitKill bool // Run: past the output cap the process is killed (output_limit)
	oomBase   uint64
	timer     *time.Timer
	done      chan struct{} // closed once ended, its output drained, res set

	mu     sync.Mutex
	killed nsjail.Status // why we killed it, if we did
	res    *ProcessResult
}

// Exec starts a process in the sandbox and returns once it was exec'd.
// A start that fails (no such program, a bad directory) is an error
// classified as a run's is; the sandbox goes on.
func (s *Sandbox) Exec(ctx context.Context, req ProcessRequest) (*Process, error) {
	return s.exec(ctx, req, false)
}

func (s *Sandbox) exec(ctx context.Context, req ProcessRequest, foreground bool) (*Process, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	// A place under MaxProcesses, held from here: given back below if the
	// start fails, turned into the process's entry in procs if it starts.
	s.mu.Lock()
	if s.maxProcs > 0 && len(s.procs)+s.starting >= s.maxProcs {
		s.mu.Unlock()
		return nil, ErrSandboxFull
	}
	s.starting++
	s.mu.Unlock()
	started := false
	defer func() {
		if !started {
			s.mu.Lock()
			s.starting--
			s.mu.Unlock()
		}
	}()
	argv, err := s.argv(req)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(s.env)+len(req.Env))
	for k, v := range s.env {
		env[k] = v
	}
	for k, v := range req.Env {
		if k == "" || k[0] == '=' || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, policy.Invalid("env", "%q is not a variable name and value", k)
		}
		env[k] = v
	}
	envList := make([]string, 0, len(env))
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	sort.Strings(envList)
	dir := req.Dir
	if dir == "" {
		dir = "/workspace"
	} else if !path.IsAbs(dir) {
		dir = path.Join("/workspace", dir)
	}
	p := &Process{s: s, done: make(chan struct{}), limitKill: foreground,
		info: ProcessInfo{Argv: argv, Command: req.Command, Cwd: dir, Env: req.Env, Tag: req.Tag, TTY: req.TTY != nil, State: "running"}}
	max := int64(s.pol.MaxOutput)
	if max <= 0 {
		max = 1 << 20
	}
	p.out, p.errs = newStreamBuf(max), newStreamBuf(max)
	ps := nsjail.LiveProcessSpec{Args: argv, Env: envList, Dir: dir, Rlimits: s.rl, TTY: req.TTY != nil}
	var reads []*os.File // our ends of stdout, stderr (or the pty's master)
	var theirs []*os.File
	cleanup := func() {
		for _, f := range theirs {
			f.Close()
		}
	}
	if req.TTY != nil {
		master, slave, err := openPTY(ctx, s.live, *req.TTY)
		if err != nil {
			return nil, &policy.SetupError{Stage: "pty", Err: err}
		}
		theirs = append(theirs, slave)
		ps.Stdin, ps.Stdout, ps.Stderr = slave, slave, slave
		p.pty, p.stdin = master, master
		reads = []*os.File{master}
	} else {
		var stdinR *os.File
		if req.Stdin {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, &policy.SetupError{Stage: "pipe", Err: err}
			}
			stdinR, p.stdin = r, w
		} else if stdinR, err = os.Open(os.DevNull); err != nil {
			return nil, &policy.SetupError{Stage: "stdin", Err: err}
		}
		theirs = append(theirs, stdinR)
		for range 2 {
			r, w, err := os.Pipe()
			if err != nil {
				cleanup()
				for _, f := range reads {
					f.Close()
				}
				return nil, &policy.SetupError{Stage: "pipe", Err: err}
			}
			theirs, reads = append(theirs, w), append(reads, r)
		}
		ps.Stdin, ps.Stdout, ps.Stderr = stdinR, theirs[1], theirs[2]
	}
	if s.group != nil {
		if n, err := cgroups.OOMKills(s.group); err == nil {
			p.oomBase = n
		}
	}
	p.info.StartedAt = time.Now()
	lp, err := s.live.Start(ctx, ps)
	cleanup() // the process has its own copies
	if err != nil {
		for _, f := range reads {
			f.Close()
		}
		if p.stdin != nil && p.stdin != p.pty {
			p.stdin.Close()
		}
		if s.Err() != nil {
			return nil, s.Err()
		}
		return nil, err
	}
	p.lp, p.info.PID = lp, lp.PID()
	// The output: copied as it comes; the whole of it is in by the time
	// the process's end is reported (finish drains each pipe).
	pumps := make([]func(), len(reads))
	for i, f := range reads {
		b := p.out
		if i == 1 {
			b = p.errs
		}
		if foreground {
			b.overflow = func() { p.kill(nsjail.StatusOutputLimit) }
		}
		pumps[i] = b.pump(f, req.TTY != nil)
	}
	s.mu.Lock()
	s.procs[p.info.PID] = p
	s.starting--
	started = true
	s.mu.Unlock()
	timeout := req.Timeout
	if timeout == 0 && foreground {
		timeout = time.Duration(s.pol.Timeout)
	}
	if timeout > 0 {
		p.timer = time.AfterFunc(timeout, func() { p.kill(nsjail.StatusTimeout) })
	}
	go p.finish(pumps)
	return p, nil
}

// argv resolves what the request runs.
func (s *Sandbox) argv(req ProcessRequest) ([]string, error) {
	n := 0
	for _, set := range []bool{len(req.Argv) > 0 && req.Language == "", req.Command != "", req.Language != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, policy.Invalid("argv", "give exactly one of argv, command, or language with code")
	}
	switch {
	case req.Command != "":
		return []string{"/bin/sh", "-c", req.Command}, nil
	case req.Language != "":
		lang, err := s.e.language(req.Language)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.codes++
		name := ".airlock/code-" + strconv.Itoa(s.codes) + path.Ext(lang.File)
		s.mu.Unlock()
		if err := s.files.writeTmp(name, []byte(req.Code)); err != nil {
			return nil, err
		}
		argv := append([]string{lang.Interpreter}, lang.Flags...)
		return append(append(argv, "/tmp/"+name), req.Argv...), nil
	}
	return req.Argv, nil
}

// Run runs a process in the foreground: Exec, stdin given whole (nil =
// none), and its Result. Cancelling ctx kills it (status cancelled).
func (s *Sandbox) Run(ctx context.Context, req ProcessRequest, stdin []byte) (*ProcessResult, error) {
	req.Stdin = stdin != nil && req.TTY == nil
	p, err := s.exec(ctx, req, true)
	if err != nil {
		return nil, err
	}
	if req.Stdin {
		go func() {
			p.Write(stdin)
			p.CloseStdin()
		}()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.kill(nsjail.StatusCancelled)
		<-p.done
	}
	return p.result(), nil
}

// kill ends the process's group for reason (once: the first reason holds).
func (p *Process) kill(reason nsjail.Status) {
	p.mu.Lock()
	if p.killed == "" && p.res == nil {
		p.killed = reason
	}
	p.mu.Unlock()
	p.s.live.Signal(p.lp, syscall.SIGKILL, true)
}

// finish waits for the process's end, drains its output, and makes its
// result; the process then leaves the running set.
func (p *Process) finish(drains []func()) {
	<-p.lp.Done()
	if p.timer != nil {
		p.timer.Stop()
	}
	for _, d := range drains {
		d()
	}
	if p.pty != nil {
		p.errs.setEOF() // a terminal's output is all "stdout"
	}
	ws := p.lp.WaitStatus()
	oom := false
	if g := p.s.group; g != nil && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		if n, err := cgroups.OOMKills(g); err == nil && n > p.oomBase {
			oom = true
		}
	}
	p.mu.Lock()
	killed := p.killed
	if p.lp.Lost() && killed == "" {
		killed = nsjail.StatusSignaled
	}
	status, code, sig := nsjail.ProcessStatus(ws, killed, oom)
	if killed == nsjail.StatusSignaled {
		status, code, sig = nsjail.StatusSignaled, 128+int(syscall.SIGKILL), "SIGKILL"
	}
	res := &ProcessResult{PID: p.info.PID}
	res.Status, res.ExitCode, res.Signal = status, code, sig
	res.WallTimeMS = p.lp.EndedAt().Sub(p.info.StartedAt).Milliseconds()
	res.Enforced = p.s.enforced
	res.Stdout, res.StdoutEncoding, res.StdoutTruncated = p.out.all()
	res.Stderr, res.StderrEncoding, res.StderrTruncated = p.errs.all()
	if p.lp.Lost() {
		if err := p.s.Err(); err != nil {
			res.Error = policy.Describe(err)
		}
	}
	p.res = res
	p.info.State, p.info.Status, p.info.ExitCode = "exited", string(status), &res.ExitCode
	p.mu.Unlock()
	s := p.s
	s.mu.Lock()
	delete(s.procs, p.info.PID)
	s.ended = append(s.ended, p)
	if len(s.ended) > liveMaxEnded {
		s.ended = s.ended[1:]
	}
	s.mu.Unlock()
	close(p.done)
}

func (p *Process) result() *ProcessResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

// PID is the process's pid inside the sandbox.
func (p *Process) PID() int { return p.info.PID }

// Done is closed once the process ended and its output was read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Info describes the process.
func (p *Process) Info() ProcessInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// Wait waits for the process's end (or ctx's, which leaves it running).
func (p *Process) Wait(ctx context.Context) (*ProcessResult, error) {
	select {
	case <-p.done:
		return p.result(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write writes to the process's stdin (or its terminal).
func (p *Process) Write(b []byte) (int, error) {
	p.s.Touch()
	p.mu.Lock()
	f := p.stdin
	p.mu.Unlock()
	if f == nil {
		return 0, policy.Invalid("stdin", "the process's stdin is not open (start it with stdin, or it was closed)")
	}
	n, err := f.Write(b)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		// Its reader is gone: the process ended (or closed its stdin).
		return n, policy.Invalid("stdin", "the process no longer reads its stdin (it ended, or closed it)")
	}
	return n, err
}

// CloseStdin closes the process's stdin (on a terminal: sends EOF, ^D).
func (p *Process) CloseStdin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pty != nil {
		_, err := p.pty.Write([]byte{4})
		return err
	}
	if p.stdin == nil {
		return nil
	}
	err := p.stdin.Close()
	p.stdin = nil
	return err
}

// Resize sets the size of the process's terminal.
func (p *Process) Resize(rows, cols uint16) error {
	if p.pty == nil {
		return policy.Invalid("pty", "the process has no terminal")
	}
	return unix.IoctlSetWinsize(int(p.pty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
}

// Signal sends sig to the process's group.
func (p *Process) Signal(sig syscall.Signal) error {
	if err := p.s.open(); err != nil {
		return err
	}
	return p.s.live.Signal(p.lp, sig, true)
}

// Kill sends SIGKILL to the process's group.
func (p *Process) Kill() error {
	if err := p.s.open(); err != nil {
		return err
	}
	p.kill("")
	return nil
}

// Output returns what stream ("stdout" or "stderr") holds from offset
// on: see streamBuf.read.
func (p *Process) Output(stream string, offset int64) (data []byte, next int64, dropped int64, eof bool) {
	p.s.Touch()
	b := p.out
	if stream == "stderr" {
		b = p.errs
	}
	return b.read(offset)
}

// Follow calls fn with each chunk of either stream from the offsets on,
// as it comes, until both streams end (nil), ctx ends, or fn fails.
func (p *Process) Follow(ctx context.Context, stdoutOff, stderrOff int64, fn func(stream string, data []byte) error) error {
	offs := [2]int64{stdoutOff, stderrOff}
	bufs := [2]*streamBuf{p.out, p.errs}
	names := [2]string{"stdout", "stderr"}
	for {
		var waits [2]<-chan struct{}
		ended, got := 0, false
		for i, b := range bufs {
			data, next, _, eof, wait := b.readWait(offs[i])
			if len(data) > 0 {
				got = true
				if err := fn(names[i], data); err != nil {
					return err
				}
			}
			offs[i] = next
			if eof && len(data) == 0 {
				ended++
			}
			waits[i] = wait
		}
		if ended == 2 {
			return nil
		}
		if got {
			continue // read again before waiting: an end may have come with the data
		}
		select {
		case <-waits[0]:
		case <-waits[1]:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Processes lists the sandbox's running processes and the last ones that
// ended, by pid.
func (s *Sandbox) Processes() []ProcessInfo {
	s.Touch()
	s.mu.Lock()
	ps := make([]*Process, 0, len(s.procs)+len(s.ended))
	for _, p := range s.procs {
		ps = append(ps, p)
	}
	ps = append(ps, s.ended...)
	s.mu.Unlock()
	out := make([]ProcessInfo, len(ps))
	for i, p := range ps {
		out[i] = p.Info()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

// Process returns the process pid (running, or among the last ended), or
// nil.
func (s *Sandbox) Process(pid int) *Process {
	s.Touch()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[pid]; p != nil {
		return p
	}
	for i := len(s.ended) - 1; i >= 0; i-- {
		if s.ended[i].info.PID == pid {
			return s.ended[i]
		}
	}
	return nil
}

// Dial connects to port on the sandbox's own loopback.
func (s *Sandbox) Dial(ctx context.Context, port int) (net.Conn, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	return s.live.Dial(ctx, port)
}

// openPTY makes a pty of size: its master (non-blocking, ours) and slave
// (the process's). From the sandbox's own devpts, so that the process
// sees its terminal as /dev/pts/N; from the host's where pid 1 cannot
// open it (a filter or Landlock rule of the policy's).
func openPTY(ctx context.Context, live *nsjail.Live, size TTYSize) (master, slave *os.File, err error) {
	m, err := live.OpenPTY(ctx)
	if err != nil {
		m, err = unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, nil, err
		}
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return nil, nil, err
	}
	// The slave, opened read-write through the master (TIOCGPTPEER's
	// argument is its open flags): no path lookup in /dev/pts.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		unix.Close(m)
		return nil, nil, errno
	}
	if size.Rows == 0 {
		size.Rows = 24
	}
	if size.Cols == 0 {
		size.Cols = 80
	}
	unix.IoctlSetWinsize(m, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	return os.NewFile(uintptr(m), "pty"), os.NewFile(uintptr(sfd), "pty-slave"), nil
}

// streamBuf keeps the last max bytes of a stream, at absolute offsets.
type streamBuf struct {
	mu       sync.Mutex
	data     []byte
	start    int64 // offset of data[0]
	max      int64
	total    int64
	eof      bool          // the process ended and the stream was drained
	notify   chan struct{} // closed (and replaced) on each change
	overflow func()        // called once when total passes max (Run)
	over     bool
}

func newStreamBuf(max int64) *streamBuf {
	return &streamBuf{max: max, notify: make(chan struct{})}
}

func (b *streamBuf) appendLocked(p []byte) {
	b.data = append(b.data, p...)
	b.total += int64(len(p))
	if n := int64(len(b.data)); n > b.max {
		cut := n - b.max
		b.data = append(b.data[:0:0], b.data[cut:]...)
		b.start += cut
	}
	if b.total > b.max && b.overflow != nil && !b.over {
		b.over = true
		go b.overflow()
	}
	close(b.notify)
	b.notify = make(chan struct{})
}

// pump copies f into b until f's EOF (after the process's end, only
// what its orphans still write), and returns the drain its finish calls:
// every byte in the pipe when the process's end was reported is in b
// when it returns, and b then says eof. Each read and its append are one
// step under b.mu, so nothing read is in flight when the drain ends.
func (b *streamBuf) pump(f *os.File, pty bool) (drain func()) {
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return func() { b.setEOF() }
	}
	chunk := make([]byte, 32<<10)
	readOnce := func(fd uintptr) (n int, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		n, err = unix.Read(int(fd), chunk)
		if n > 0 {
			b.appendLocked(chunk[:n])
		}
		return n, err
	}
	var gone sync.WaitGroup
	gone.Add(1)
	go func() {
		defer gone.Done()
		defer f.Close()
		for {
			var n int
			var rerr error
			err := rc.Read(func(fd uintptr) bool {
				n, rerr = readOnce(fd)
				return rerr != unix.EAGAIN
			})
			if err != nil || n == 0 || (rerr != nil && rerr != unix.EINTR) {
				return // EOF, or a pty whose last slave closed (EIO)
			}
		}
	}()
	return func() {
		// What the process wrote is in the pipe now (it was reaped):
		// read it to EAGAIN. A pty may still be held by an orphan; a pipe
		// too: their later output goes on arriving, after eof.
		rc.Control(func(fd uintptr) {
			for {
				n, err := readOnce(fd)
				if n <= 0 || err != nil {
					return
				}
			}
		})
		b.setEOF()
	}
}

func (b *streamBuf) setEOF() {
	b.mu.Lock()
	b.eof = true
	close(b.notify)
	b.notify = make(chan struct{})
	b.mu.Unlock()
}

// read returns the bytes from offset on (from the oldest kept one if
// offset is older: dropped says how many were skipped), the offset after
// them, and whether the stream ended.
func (b *streamBuf) read(offset int64) (data []byte, next, dropped int64, eof bool) {
	data, next, dropped, eof, _ = b.readWait(offset)
	return
}

func (b *streamBuf) readWait(offset int64) (data []byte, next, dropped int64, eof bool, wait <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	end := b.start + int64(len(b.data))
	if offset < b.start {
		dropped, offset = b.start-offset, b.start
	}
	if offset > end {
		offset = end
	}
	data = append([]byte(nil), b.data[offset-b.start:]...)
	return data, end, dropped, b.eof, b.notify
}

// all is the whole stream for a Result: text, or base64 when it is not
// UTF-8, and whether bytes were dropped.
func (b *streamBuf) all() (string, string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, truncated := string(b.data), b.start > 0 || b.total > b.max
	if utf8.ValidString(s) {
		return s, "", truncated
	}
	return base64.StdEncoding.EncodeToString(b.data), nsjail.EncodingBase64, truncated
}
