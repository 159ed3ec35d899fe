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
	state := ""
	for deadline := time.Now().Add(10 * time.Second); state == "" && time.Now().Before(deadline); {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "nsjail.awaitExit(") {
				head, _, _ := strings.Cut(g, "\n")
				state = head
			}
		}
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(state, "[IO wait") {
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
