package nsjail

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// exited reports whether the child pid has exited, without reaping it.
func exited(t *testing.T, pid int) bool {
	t.Helper()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	return info.Signo == int32(unix.SIGCHLD)
}

// awaitExit returns once the child has exited and leaves it unreaped:
// the wait after it gets its status. It waits in the poller (the
// goroutine's state is "IO wait"), not in a system call that would keep
// its P ("syscall").
func TestAwaitExit(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "read x; exit 7")
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		awaitExit(cmd.Process.Pid)
	}()
	// Sampled until it shows the wait (it is runnable, running, or in
	// pidfd_open or the first waitid on its way there).
	if state := waitState("nsjail.awaitExit("); !strings.Contains(state, "[IO wait") {
		t.Errorf("awaitExit waits as %q, want in the poller (IO wait)", state)
	}
	select {
	case <-done:
		t.Fatal("awaitExit returned while the child ran")
	case <-time.After(50 * time.Millisecond):
	}
	w.Close() // the child reads EOF and exits 7
	<-done
	if !exited(t, cmd.Process.Pid) {
		t.Fatal("awaitExit returned before the child exited")
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("the wait after awaitExit: %v, want exit status 7 (not reaped by awaitExit)", err)
	}
}

// A child that exited before the call: awaitExit returns at once.
func TestAwaitExitExited(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !exited(t, cmd.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	awaitExit(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// waitState samples the goroutines whose stacks hold fn until one waits
// in the poller ("IO wait"), for up to 10 s, and returns that one's
// state, or the last one's seen.
func waitState(fn string) string {
	state := ""
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(state, "[IO wait") && time.Now().Before(deadline); {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, fn) && !strings.Contains(state, "[IO wait") {
				state, _, _ = strings.Cut(g, "\n")
			}
		}
		time.Sleep(time.Millisecond)
	}
	return state
}

// The seccomp listener's wait (notifyWaiter, on a pipe here) is in the
// poller, reports POLLIN once there is something to read, and ends once
// the run is reaped (exited closed).
func TestNotifyWaiter(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	exited := make(chan struct{})
	wait, done := notifyWaiter(p[0], exited)
	defer done()
	type result struct {
		revents int16
		err     error
	}
	got := make(chan result, 1)
	waitOnce := func() {
		go func() {
			r, err := wait()
			got <- result{r, err}
		}()
	}
	waitOnce()
	if state := waitState("nsjail.notifyWaiter.func"); !strings.Contains(state, "[IO wait") {
		t.Fatalf("the listener's wait is %q, want in the poller (IO wait)", state)
	}
	unix.Write(p[1], []byte{1})
	if r := <-got; r.err != nil || r.revents&unix.POLLIN == 0 {
		t.Fatalf("with data to read: revents %#x, %v; want POLLIN", r.revents, r.err)
	}
	var b [1]byte
	unix.Read(p[0], b[:])
	waitOnce()
	waitState("nsjail.notifyWaiter.func")
	close(exited)
	select {
	case r := <-got:
		if r.err == nil && r.revents != 0 {
			t.Fatalf("after the run was reaped: revents %#x, want none", r.revents)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end once the run was reaped")
	}
}
