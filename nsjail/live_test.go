package nsjail_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// liveStreams are a process's three streams: stdin's write end, the
// output pipes' read ends; the process's ends are closed after Start.
type liveStreams struct {
	in, out, errOut *os.File
	ps              nsjail.LiveProcessSpec
}

func newLiveStreams(t *testing.T, args ...string) *liveStreams {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outR.Close(); errR.Close() })
	return &liveStreams{in: inW, out: outR, errOut: errR, ps: nsjail.LiveProcessSpec{Args: args, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: inR, Stdout: outW, Stderr: errW}}
}

func (ls *liveStreams) closeChild() {
	ls.ps.Stdin.Close()
	ls.ps.Stdout.Close()
	ls.ps.Stderr.Close()
}

func startLive(t *testing.T, l *nsjail.Live, args ...string) (*nsjail.LiveProcess, *liveStreams) {
	t.Helper()
	ls := newLiveStreams(t, args...)
	p, err := l.Start(context.Background(), ls.ps)
	ls.closeChild()
	if err != nil {
		t.Fatalf("start %q: %v", args, err)
	}
	return p, ls
}

func prepareLive(t *testing.T) *nsjail.Live {
	t.Helper()
	resolve := reaperResolver(t)
	spec := resolve([]string{"true"}, policy.Default())
	l, err := nsjail.PrepareLive(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// A live sandbox runs process after process, at once and one after
// another, each pid 1's child: a background process started first
// lives on while others come and go, sees the files they leave, and is
// reached through Dial on the sandbox's own loopback; its end is
// reported with its wait status; Close takes everything with it.
func TestLiveSandbox(t *testing.T) {
	l := prepareLive(t)
	// A server in the background, on the sandbox's loopback.
	srv, srvIO := startLive(t, l, "python3", "-c", `
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8765)); s.listen(); print("listening", flush=True)
while True:
    c, _ = s.accept(); c.sendall(open("/workspace/msg").read().encode()); c.close()
`)
	line, err := bufio.NewReader(srvIO.out).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("server: %q, %v", line, err)
	}
	// Another process writes what the server serves, and ends.
	w, wIO := startLive(t, l, "sh", "-c", "echo hello from $$ > /workspace/msg; echo done; exit 3")
	out, _ := io.ReadAll(wIO.out)
	<-w.Done()
	if ws := w.WaitStatus(); !ws.Exited() || ws.ExitStatus() != 3 || string(out) != "done\n" {
		t.Fatalf("writer: %v, %q", ws, out)
	}
	if w.PID() == srv.PID() || w.PID() <= 1 {
		t.Fatalf("pids: writer %d, server %d", w.PID(), srv.PID())
	}
	c, err := l.Dial(context.Background(), 8765)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if want := "hello from " + strconv.Itoa(w.PID()) + "\n"; string(got) != want {
		t.Fatalf("through Dial: %q, want %q", got, want)
	}
	// Nothing listens on another port: refused, from the sandbox's
	// loopback (the host's is not reached).
	if _, err := l.Dial(context.Background(), 8766); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("dial of a closed port: %v", err)
	}
	// stdin as a stream.
	cat, catIO := startLive(t, l, "cat")
	catIO.in.WriteString("abc")
	catIO.in.Close()
	if b, _ := io.ReadAll(catIO.out); string(b) != "abc" {
		t.Fatalf("cat: %q", b)
	}
	<-cat.Done()
	// A start that fails leaves the sandbox serving.
	ls := newLiveStreams(t, "/no/such")
	if _, err := l.Start(context.Background(), ls.ps); err == nil {
		t.Fatal("a missing program started")
	}
	ls.closeChild()
	// Signals: to the server's process group.
	if err := l.Signal(srv, syscall.SIGTERM, true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server outlived its SIGTERM")
	}
	if ws := srv.WaitStatus(); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("server: %v", ws)
	}
	// Close: a sleeper dies with the sandbox, reported lost.
	sl, _ := startLive(t, l, "sleep", "1000")
	pid1 := l.Pid()
	l.Close()
	<-sl.Done()
	if !sl.Lost() {
		t.Fatal("the sleeper was not reported as ended with its sandbox")
	}
	if err := syscall.Kill(pid1, 0); err == nil {
		t.Fatalf("pid 1 (host pid %d) is still there", pid1)
	}
	if _, err := l.Dial(context.Background(), 8765); err == nil {
		t.Fatal("a closed sandbox dialled")
	}
}
