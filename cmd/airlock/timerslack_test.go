package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// onThread runs f on a thread of its own, after set has set an attribute
// of that thread (its timer slack, its CPUs): a process f starts
// inherits it (the fork is made on the calling thread). The thread ends
// with f (locked, never unlocked).
func onThread(t *testing.T, set func() error, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := set(); err != nil {
			done <- err
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// onThreadWithSlack runs f on a thread of its own whose timer slack is
// slack.
func onThreadWithSlack(t *testing.T, slack uint64, f func()) {
	t.Helper()
	onThread(t, func() error { return unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0) }, f)
}

// The CLI runs with a timer slack of its own (launchabi.InitTimerSlack,
// set at its entry, so that its runtime's monitor thread wakes less) and
// its program with the caller's: launched at the CLI's start (run, exec
// -c), launched later (--json), and run by airlock-daemon, exec'd by the
// CLI (exec of code on stdin).
func TestCLITimerSlack(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	const caller = 123457
	read := "cat /proc/self/timerslack_ns"
	for name, c := range map[string]struct {
		args  []string
		stdin string
	}{
		"run":         {[]string{"run", "--", "/bin/sh", "-c", read}, ""},
		"json":        {[]string{"run", "--json", "--", "/bin/sh", "-c", read}, ""},
		"exec code":   {[]string{"exec", "--lang", "sh", "-c", read}, ""},
		"exec stdin":  {[]string{"exec", "--lang", "sh", "-"}, read + "\n"},
		"bare caller": {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			var code int
			var out, errs string
			onThreadWithSlack(t, caller, func() {
				cmd := exec.Command("/bin/sh", "-c", read)
				if c.args != nil {
					cmd = exec.Command(bin, c.args...)
				}
				cmd.Stdin = strings.NewReader(c.stdin)
				code, out, errs = runCLI(t, cmd)
			})
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			want := strconv.Itoa(caller) + "\n"
			if name == "json" {
				want = `"stdout": "` + strconv.Itoa(caller) + `\n"`
			}
			if !strings.Contains(out, want) {
				t.Errorf("the program's timer slack: got %q, want %q (its caller's)", out, want)
			}
		})
	}
	// The CLI's own, from the host: another process's timer slack is
	// readable only with CAP_SYS_NICE, so only as root (the rootless pass
	// checks the program's above).
	if os.Getuid() != 0 {
		return
	}
	var cmd *exec.Cmd
	onThreadWithSlack(t, caller, func() {
		cmd = exec.Command(bin, "run", "--", "/bin/sleep", "10")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	})
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	path := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/timerslack_ns"
	var got string
	testutil.WaitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		got = strings.TrimSpace(string(b))
		return err == nil && got != strconv.Itoa(caller)
	})
	if got != strconv.Itoa(launchabi.InitTimerSlack) {
		t.Errorf("the CLI's own timer slack: %q, want %d (launchabi.InitTimerSlack)", got, launchabi.InitTimerSlack)
	}
}
