//go:build linux

package nsjail

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/jailinit"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// A live sandbox (PrepareLive) outlives any one program: its pid 1, the
// reaper in its live mode (cmd/airlock-spawn, "l"), starts process after
// process as its own children, so that every one of them runs under the
// confinement pid 1 has, which the init set up once: the namespaces, the
// root filesystem, the cgroup, the ids, no capability, no_new_privs, the
// Landlock domain and the seccomp filter. Nothing enters from outside:
// there is no setns path, no second confinement to get right, and a
// process that enters cannot be confined less than the first. The
// supervisor resolves each process (argv, environment, directory,
// rlimits) and sends it with its three streams; pid 1 only carries it
// out. The messages are spawn.c's struct liveReq and liveEv.

// LiveSyscalls are the calls a live sandbox's pid 1 makes under the
// filter besides ReaperSyscalls: its poll loop, its requests and the
// sockets and directories it opens for the supervisor (Dial, OpenDir).
// The default profile allows them all.
var LiveSyscalls = []string{"ppoll", "signalfd4", "recvmsg", "dup3", "socket", "connect", "openat", "ioctl"}

const (
	liveMagic                     = 0x4556494c
	liveStart, liveSignal         = 1, 2
	liveDial, liveOpen            = 3, 4
	evlStarted, evlFailed         = 1, 2
	evlEnded, evlDialed, evlOpend = 3, 4, 5
	// liveMaxProcs bounds the processes a live sandbox runs at once
	// (spawn.c: MAXLIVE).
	liveMaxProcs = 1024
)

// Live is a live sandbox: see PrepareLive.
type Live struct {
	p *Prepared

	startMu sync.Mutex // a start's request and its program (on the spec pipe) go out together
	mu      sync.Mutex
	next    uint32
	waiting map[uint32]chan liveEvent // replies to a start, a dial, an open
	procs   map[uint32]*LiveProcess
	ended   chan struct{} // the status reader ended: pid 1 is gone or was closed
	err     error         // why, once ended
}

type liveEvent struct {
	kind, id uint32
	a, b     int32
	fd       int // -1 = none
}

// LiveProcessSpec is one process to start in a live sandbox.
type LiveProcessSpec struct {
	// Args, Env, Dir and Rlimits as Spec's (Dir "" = /workspace).
	Args    []string
	Env     []string
	Dir     string
	Rlimits []Rlimit
	// Stdin, Stdout and Stderr are the process's streams (Start sends
	// copies; the caller closes its own). With TTY they are one
	// terminal's slave, made the process's controlling terminal.
	Stdin, Stdout, Stderr *os.File
	TTY                   bool
}

// LiveProcess is a process started in a live sandbox.
type LiveProcess struct {
	id   uint32
	pid  int
	done chan struct{}
	// Set before done closes.
	ws      syscall.WaitStatus
	endedAt time.Time
	lost    bool // pid 1 ended first: the process died with the namespace
}

// PID is the process's pid inside the sandbox.
func (p *LiveProcess) PID() int { return p.pid }

// Done is closed once the process ended (or its sandbox did).
func (p *LiveProcess) Done() <-chan struct{} { return p.done }

// WaitStatus is the process's wait status once Done is closed: as pid 1
// reaped it, or, when the sandbox ended first (Lost), SIGKILL.
func (p *LiveProcess) WaitStatus() syscall.WaitStatus { return p.ws }

// Lost reports whether the process ended with its sandbox, unreaped.
func (p *LiveProcess) Lost() bool { return p.lost }

// EndedAt is when its end was reported.
func (p *LiveProcess) EndedAt() time.Time { return p.endedAt }

// PrepareLive builds a live sandbox from spec, as Prepare builds one (its
// program part is ignored), with a reaper as pid 1 in its live mode: it
// needs a reaper (SpawnPath, or the embedded one: CheckReaper), the
// namespaces backend, and a filter that allows ReaperSyscalls and
// LiveSyscalls (the executor checks). Its processes come with Start; its
// end is Close (or pid 1's death: Done).
func PrepareLive(ctx context.Context, spec Spec) (*Live, error) {
	if spec.Process {
		return nil, policy.Invalid("backend", "a live sandbox needs the namespaces backend (the process backend has no pid 1 of its own)")
	}
	if spec.NoReaper {
		return nil, policy.Invalid("reaper", "a live sandbox's pid 1 is its reaper")
	}
	spec.Live, spec.ReaperWaits, spec.Recycle = true, true, false
	proxy := spec.Egress // (Prepare takes none: a run's comes with its program)
	p, err := Prepare(ctx, spec)
	if err != nil {
		if proxy != nil {
			proxy.Close()
		}
		return nil, err
	}
	if proxy != nil {
		// The allow-list's proxy serves the listener the init made, for
		// as long as the sandbox lives (Close ends it).
		p.s.mu.Lock()
		p.s.spec.Egress = proxy
		p.s.enforced = enforcedFor(p.s.spec)
		p.s.mu.Unlock()
		p.s.serveEgress()
	}
	if !p.s.live {
		p.Close()
		return nil, &policy.SetupError{Stage: "reaper", Err: errors.New("no reaper to be a live sandbox's pid 1 (nsjail.CheckReaper)")}
	}
	l := &Live{p: p, waiting: map[uint32]chan liveEvent{}, procs: map[uint32]*LiveProcess{}, ended: make(chan struct{})}
	go l.read()
	return l, nil
}

// Pid is the host pid of the sandbox's pid 1.
func (l *Live) Pid() int { return l.p.Pid() }

// Done is closed once the sandbox ended: Close, or pid 1's death.
func (l *Live) Done() <-chan struct{} { return l.ended }

// Err says why the sandbox ended (nil while it lives, and after Close).
func (l *Live) Err() error {
	select {
	case <-l.ended:
		return l.err
	default:
		return nil
	}
}

// Enforced is what the sandbox enforces (its processes' Result.Enforced).
func (l *Live) Enforced() Enforced { return l.p.s.enforced }

// HostIDs are the host uid and gid the sandbox's user maps to.
func (l *Live) HostIDs() (uid, gid int) { return hostIDs(l.p.s.spec) }

// Cgroup is the sandbox's cgroup (nil if it has none).
func (l *Live) Cgroup() cgroups.Group { return l.p.s.spec.Cgroup }

// Close kills every process of the sandbox (pid 1's death takes its pid
// namespace) and reaps pid 1. The caller removes the cgroup. Idempotent.
func (l *Live) Close() error {
	l.p.discard()
	<-l.ended
	l.p.s.closeEgress()
	return nil
}

// Network is the egress proxy's connection log so far (net allow), and
// how many entries past its cap were dropped.
func (l *Live) Network() ([]egress.Conn, int) {
	l.p.s.mu.Lock()
	proxy := l.p.s.spec.Egress
	l.p.s.mu.Unlock()
	if proxy == nil {
		return nil, 0
	}
	return proxy.Log()
}

var errLiveEnded = &policy.SetupError{Stage: "sandbox", Err: errors.New("the live sandbox has ended")}

// send sends one request with its rights.
func (l *Live) send(op, id uint32, arg int32, flags uint32, rights []byte) error {
	var b [16]byte
	binary.LittleEndian.PutUint32(b[0:], op)
	binary.LittleEndian.PutUint32(b[4:], id)
	binary.LittleEndian.PutUint32(b[8:], uint32(arg))
	binary.LittleEndian.PutUint32(b[12:], flags)
	var err error
	if werr := l.p.status.Write(func(fd uintptr) bool {
		err = unix.Sendmsg(int(fd), b[:], rights, nil, unix.MSG_NOSIGNAL)
		return err != unix.EAGAIN && err != unix.EINTR
	}); werr != nil {
		return werr
	}
	return err
}

// request allocates an id and its reply channel.
func (l *Live) request() (uint32, chan liveEvent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.ended:
		return 0, nil, errLiveEnded
	default:
	}
	l.next++
	ch := make(chan liveEvent, 1)
	l.waiting[l.next] = ch
	return l.next, ch, nil
}

func (l *Live) forget(id uint32) {
	l.mu.Lock()
	delete(l.waiting, id)
	l.mu.Unlock()
}

// await waits for id's reply, the sandbox's end or ctx's.
func (l *Live) await(ctx context.Context, id uint32, ch chan liveEvent) (liveEvent, error) {
	select {
	case ev := <-ch:
		return ev, nil
	case <-l.ended:
		l.forget(id)
		return liveEvent{}, errLiveEnded
	case <-ctx.Done():
		l.forget(id)
		// A reply that still comes carries no fd to leak: read drops
		// what nobody waits for, closing its fd.
		return liveEvent{}, ctx.Err()
	}
}

// Start starts one process and returns once it was exec'd: a failure
// before (not found, a chdir, an rlimit) is a SetupError of its stage,
// as for a run, and the sandbox lives on.
func (l *Live) Start(ctx context.Context, ps LiveProcessSpec) (*LiveProcess, error) {
	spec := Spec{Args: ps.Args, Env: ps.Env, Dir: ps.Dir, Rlimits: ps.Rlimits}
	if len(spec.Args) == 0 || spec.Args[0] == "" {
		return nil, policy.Invalid("args", "no program given")
	}
	if !reaperFits(&spec) {
		return nil, policy.Invalid("args", "the program, its environment or its limits are beyond a live sandbox's bounds (%d strings, %d MiB)", reaperMaxStrings, reaperMaxMsg>>20)
	}
	if ps.Stdin == nil || ps.Stdout == nil || ps.Stderr == nil {
		return nil, policy.Invalid("streams", "a live process needs its three streams")
	}
	id, ch, err := l.request()
	if err != nil {
		return nil, err
	}
	proc := &LiveProcess{id: id, done: make(chan struct{})}
	l.mu.Lock()
	if len(l.procs) >= liveMaxProcs-1 {
		l.mu.Unlock()
		l.forget(id)
		return nil, &policy.SetupError{Stage: "processes", Err: fmt.Errorf("%d processes run in this sandbox already: %w", len(l.procs), syscall.EAGAIN)}
	}
	l.procs[id] = proc // before the request: its end may follow its start at once
	l.mu.Unlock()
	fail := func(err error) (*LiveProcess, error) {
		l.mu.Lock()
		delete(l.procs, id)
		l.mu.Unlock()
		l.forget(id)
		return nil, err
	}
	var flags uint32
	if ps.TTY {
		flags = 1
	}
	pc := programConfigFor(&spec)
	pc.Seccomp, pc.TTY = nil, false
	// Ordering: the request, then its program on the spec pipe, with no
	// other start between them (pid 1 reads the program it announces).
	l.startMu.Lock()
	err = l.send(liveStart, id, 0, flags, unix.UnixRights(int(ps.Stdin.Fd()), int(ps.Stdout.Fd()), int(ps.Stderr.Fd())))
	if err == nil {
		err = jailinit.WriteMsg(l.p.c.specW, pc.Marshal())
	}
	l.startMu.Unlock()
	if err != nil {
		return fail(&policy.SetupError{Stage: "send process", Err: err})
	}
	// Not ctx: pid 1 answers a start it took at once, and a process that
	// started must be known (its end would otherwise have nobody).
	ev, err := l.await(context.Background(), id, ch)
	if err != nil {
		return fail(err)
	}
	if ev.kind == evlFailed {
		stage := "exec"
		switch ev.a {
		case 1:
			stage = "setrlimit"
		case 2:
			stage = "chdir"
		}
		err := syscall.Errno(ev.b)
		if stage == "exec" && (err == syscall.ENOENT || err == syscall.EACCES || err == syscall.ENOEXEC) {
			return fail(policy.Invalid("args", "%s: %v", spec.Args[0], err))
		}
		return fail(&policy.SetupError{Stage: stage, Err: err})
	}
	proc.pid = int(ev.a)
	return proc, nil
}

// Signal sends sig to the process (to its process group, which it leads,
// with group). A process that ended is not signalled.
func (l *Live) Signal(p *LiveProcess, sig syscall.Signal, group bool) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	var flags uint32
	if group {
		flags = 1
	}
	if err := l.send(liveSignal, p.id, int32(sig), flags, nil); err != nil {
		select {
		case <-l.ended:
			return errLiveEnded
		default:
		}
		return &policy.SetupError{Stage: "signal", Err: err}
	}
	return nil
}

// Dial connects to port on the sandbox's own loopback (127.0.0.1, then
// ::1 when that refuses): a socket pid 1 made in the sandbox's network
// namespace, which reaches nothing of the host's.
func (l *Live) Dial(ctx context.Context, port int) (net.Conn, error) {
	if port <= 0 || port > 65535 {
		return nil, policy.Invalid("port", "%d is not a TCP port", port)
	}
	c, err := l.dial(ctx, port, false)
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EADDRNOTAVAIL) {
		if c6, err6 := l.dial(ctx, port, true); err6 == nil {
			return c6, nil
		}
	}
	return c, err
}

func (l *Live) dial(ctx context.Context, port int, v6 bool) (net.Conn, error) {
	var flags uint32
	if v6 {
		flags = 1
	}
	fd, err := l.fdRequest(ctx, liveDial, int32(port), flags)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	// The connect is non-blocking: the runtime poller waits for it (a
	// write-ready socket), then its outcome (SO_ERROR; a socket still
	// connecting has no peer yet), as net's own dial does.
	f := os.NewFile(uintptr(fd), "sandbox-tcp")
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { f.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	var cerr error
	if werr := rc.Write(func(fd uintptr) bool {
		soErr, gerr := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		switch {
		case gerr != nil:
			cerr = gerr
		case soErr != 0:
			cerr = syscall.Errno(soErr)
		default:
			if _, perr := unix.Getpeername(int(fd)); errors.Is(perr, unix.ENOTCONN) {
				return false // still connecting
			}
		}
		return true
	}); werr != nil {
		if ctx.Err() != nil {
			werr = ctx.Err()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: werr}
	}
	if cerr != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: cerr}
	}
	return net.FileConn(f)
}

// OpenDir returns an O_PATH descriptor of the sandbox's /workspace (tmp
// false) or /tmp, as pid 1 opened it in the sandbox's mount namespace:
// the supervisor's way to its files (os.OpenRoot on /proc/self/fd/N).
func (l *Live) OpenDir(ctx context.Context, tmp bool) (*os.File, error) {
	which := int32(0)
	if tmp {
		which = 1
	}
	fd, err := l.fdRequest(ctx, liveOpen, which, 0)
	if err != nil {
		return nil, &policy.SetupError{Stage: "workspace", Err: err}
	}
	return os.NewFile(uintptr(fd), "sandbox-dir"), nil
}

// OpenPTY returns the master of a new pty of the sandbox's own devpts
// (its /dev/ptmx, opened by pid 1; non-blocking), so that the slave is
// /dev/pts/N inside: ttyname and ps name it there. The caller owns
// the fd (close-on-exec).
func (l *Live) OpenPTY(ctx context.Context) (int, error) {
	fd, err := l.fdRequest(ctx, liveOpen, 2, 0)
	if err != nil {
		return -1, &policy.SetupError{Stage: "pty", Err: err}
	}
	return fd, nil
}

// fdRequest sends a request answered by an errno or an fd.
func (l *Live) fdRequest(ctx context.Context, op uint32, arg int32, flags uint32) (int, error) {
	id, ch, err := l.request()
	if err != nil {
		return -1, err
	}
	if err := l.send(op, id, arg, flags, nil); err != nil {
		l.forget(id)
		return -1, err
	}
	ev, err := l.await(ctx, id, ch)
	if err != nil {
		return -1, err
	}
	if ev.a != 0 || ev.fd < 0 {
		closeFD(ev.fd)
		if ev.a == 0 {
			ev.a = int32(syscall.EIO)
		}
		return -1, syscall.Errno(ev.a)
	}
	return ev.fd, nil
}

// read takes pid 1's events until its end: a start's or a request's
// reply goes to its waiter, a process's end to its LiveProcess. pid 1's
// own failure (an init status message) or EOF ends the sandbox: its
// processes died with it.
func (l *Live) read() {
	var buf [4 << 10]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	var endErr error
	for {
		var n, oobn int
		var err error
		if rerr := l.p.status.Read(func(fd uintptr) bool {
			n, oobn, _, _, err = unix.Recvmsg(int(fd), buf[:], oob, unix.MSG_CMSG_CLOEXEC)
			return err != unix.EAGAIN && err != unix.EINTR
		}); rerr != nil {
			err = rerr
		}
		if err != nil || n == 0 {
			break
		}
		fds := rightsIn(oob[:oobn])
		if n != 20 || binary.LittleEndian.Uint32(buf[0:]) != liveMagic {
			closeAllFDs(fds)
			var st initStatus
			if st.Unmarshal(buf[:n]) == nil && st.Stage != "" {
				endErr = &policy.SetupError{Stage: st.Stage, Err: fmt.Errorf("%s: %v", st.Msg, syscall.Errno(st.Errno))}
			} else {
				endErr = &policy.SetupError{Stage: "reaper", Err: errors.New("bad message from the live sandbox's pid 1")}
			}
			break
		}
		ev := liveEvent{kind: binary.LittleEndian.Uint32(buf[4:]), id: binary.LittleEndian.Uint32(buf[8:]),
			a: int32(binary.LittleEndian.Uint32(buf[12:])), b: int32(binary.LittleEndian.Uint32(buf[16:])), fd: -1}
		if len(fds) > 0 {
			ev.fd = fds[0]
			closeAllFDs(fds[1:])
		}
		l.mu.Lock()
		if ev.kind == evlEnded {
			if p := l.procs[ev.id]; p != nil {
				delete(l.procs, ev.id)
				p.ws, p.endedAt = syscall.WaitStatus(ev.a), time.Now()
				close(p.done)
			}
			l.mu.Unlock()
			continue
		}
		ch := l.waiting[ev.id]
		delete(l.waiting, ev.id)
		l.mu.Unlock()
		if ch == nil {
			closeFD(ev.fd) // its waiter gave up
			continue
		}
		ch <- ev
	}
	// pid 1 is gone (or closing): so is every process of its namespace.
	l.p.discard()
	<-l.p.s.exited
	l.mu.Lock()
	l.err = endErr
	if l.err == nil && l.p.s.killReason() == "" {
		if st := l.p.s.cmd.ProcessState; st != nil && !st.Success() {
			l.err = &policy.SetupError{Stage: "reaper", Err: fmt.Errorf("the live sandbox's pid 1 ended: %v", st)}
		}
	}
	for id, p := range l.procs {
		delete(l.procs, id)
		p.ws, p.endedAt, p.lost = syscall.WaitStatus(syscall.SIGKILL), time.Now(), true
		close(p.done)
	}
	close(l.ended)
	l.mu.Unlock()
}

// rightsIn returns the fds of a control message (none if it has none).
func rightsIn(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeAllFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
