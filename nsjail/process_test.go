package nsjail_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"golang.org/x/sys/unix"
)

// pidReuseEnv runs TestProcessGroupKillSparesReusedPid's inner half: in
// a pid namespace of its own, whose next pid it can choose.
const pidReuseEnv = "AIRLOCK_TEST_PID_REUSE"

// The process backend kills its program's process group when the program
// ends. That kill must never reach a process that took the program's pid
// (and so, after a setsid, its group id) once the program was reaped: in
// a pid namespace of its own, the test hands that pid to a setsid'd
// stranger as soon as the supervisor reports the program's exit, and the
// stranger must survive the run.
func TestProcessGroupKillSparesReusedPid(t *testing.T) {
	if os.Getenv(pidReuseEnv) == "1" {
		pidReuseInside(t)
		return
	}
	testutil.RequireUserNS(t)
	cmd := exec.Command("/proc/self/exe", "-test.run=^TestProcessGroupKillSparesReusedPid$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), pidReuseEnv+"=1")
	// A user namespace whose uid 1000 (not 0: the process backend would
	// switch root to 65534, unmapped there) keeps CAP_SYS_ADMIN, to mount
	// the new pid namespace's /proc and set its next pid.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 1000, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 1000, HostID: os.Getgid(), Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		Pdeathsig:   syscall.SIGKILL,
	}
	// A Go thread of the inner test born at the wrong moment can take the
	// pid first: then that run cannot judge, and a fresh namespace tries
	// again.
	for try := 1; ; try++ {
		c := *cmd
		out, err := c.CombinedOutput()
		if strings.Contains(string(out), pidTaken) && try < 5 {
			t.Logf("try %d: %s", try, pidTaken)
			continue
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestProcessGroupKillSparesReusedPid") {
			t.Fatalf("inner test: %v\n%s", err, out)
		}
		t.Logf("inner test:\n%s", out)
		return
	}
}

// pidTaken: the inner test could not hand the program's pid on.
const pidTaken = "the program's pid was taken before the stranger could get it"

func pidReuseInside(t *testing.T) {
	if os.Getpid() != 1 {
		t.Fatalf("not pid 1 of a new pid namespace (pid %d)", os.Getpid())
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal(err)
	}
	h := &reuseOnExit{t: t}
	spec := nsjail.Spec{Process: true, Args: []string{"/bin/true"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
		Logger: slog.New(h), Timeout: time.Minute}
	res, err := nsjail.Run(context.Background(), spec)
	if err != nil || res.Status != nsjail.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	h.mu.Lock()
	pid, got, herr := h.pid, h.stranger, h.err
	h.mu.Unlock()
	if herr != nil {
		t.Fatal(herr)
	}
	if got != pid {
		t.Fatalf("%s (pid %d, the stranger got %d)", pidTaken, pid, got)
	}
	// The stranger is our child (we are pid 1: its shell parent is gone).
	// Alive, it ends by this SIGTERM; SIGKILLed by the run, it ended so.
	unix.Kill(pid, unix.SIGTERM)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ws.Signaled() && ws.Signal() == unix.SIGKILL {
		t.Fatalf("the run's group kill reached pid %d, which a stranger got after the program was reaped", pid)
	}
	if !ws.Signaled() || ws.Signal() != unix.SIGTERM {
		t.Fatalf("the stranger ended on its own: %v", ws)
	}
}

// reuseOnExit is the run's logger: it learns the program's pid, and when
// the supervisor reports the program's exit ("exited", in Wait, before
// the result), it starts a setsid'd stranger with that pid: a shell
// sets the namespace's last pid and forks it, so that no thread of this
// process is born in between (a shell has one).
type reuseOnExit struct {
	t        *testing.T
	mu       sync.Mutex
	pid      int
	stranger int // the stranger's pid
	err      error
}

func (h *reuseOnExit) Enabled(context.Context, slog.Level) bool { return true }
func (h *reuseOnExit) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *reuseOnExit) WithGroup(string) slog.Handler            { return h }

func (h *reuseOnExit) Handle(_ context.Context, r slog.Record) error {
	var phase string
	r.Attrs(func(a slog.Attr) bool {
		switch {
		case a.Key == "pid" && r.Message == "sandbox started":
			h.mu.Lock()
			h.pid = int(a.Value.Int64())
			h.mu.Unlock()
		case a.Key == "phase":
			phase = a.Value.String()
		}
		return true
	})
	if phase != "exited" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out, err := exec.Command("/bin/sh", "-c", `echo $0 >/proc/sys/kernel/ns_last_pid || exit 1; setsid /bin/sleep 600 </dev/null >/dev/null 2>&1 & echo $!`,
		strconv.Itoa(h.pid-1)).Output()
	if err == nil {
		h.stranger, err = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	h.err = err
	return nil
}
