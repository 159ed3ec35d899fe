package executor_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// A program that links airlock as a library and gives executor.New no
// helper (internal/testutil/libuser, built by scripts/testlib.sh) runs
// its sandboxes as whole as the CLI does: its own binary is their reaper
// (cgo), so a program that sends itself SIGTERM ends by it, as bare. The
// same program without its nsjail.Init() call is told to add it, and
// built with CGO_ENABLED=0 it is refused before anything runs, naming
// what that build lacks (libseccomp; with no filter to compile, the
// reaper) and the fix.
func TestLibraryUser(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	run := func(name string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		if strings.HasSuffix(name, "-nofilter") {
			cmd.Path = strings.TrimSuffix(cmd.Path, "-nofilter")
			cmd.Env = append(cmd.Environ(), "LIBUSER_NO_FILTER=1")
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(out), stderr.String(), cmd.ProcessState.ExitCode()
	}
	t.Run("lone", func(t *testing.T) {
		out, stderr, code := run("airlock-libuser", "sh", "-c", "kill -TERM $$")
		var res struct {
			Status, Signal, Pid1 string
			ExitCode             int `json:"exit_code"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("exit %d: %s %s", code, out, stderr)
		}
		if res.Status != "signaled" || res.Signal != "SIGTERM" || res.ExitCode != 143 || res.Pid1 != "reaper" {
			t.Errorf("self SIGTERM: %+v, want signaled SIGTERM 143, pid1 reaper", res)
		}
	})
	t.Run("no Init", func(t *testing.T) {
		_, stderr, code := run("airlock-libuser-noinit", "true")
		if code != 3 || !strings.Contains(stderr, "call nsjail.Init() first thing in its main") {
			t.Errorf("exit %d, %q: want the missing nsjail.Init() named", code, stderr)
		}
	})
	t.Run("no cgo", func(t *testing.T) {
		_, stderr, code := run("airlock-libuser-nocgo", "true")
		if code != 3 || !strings.Contains(stderr, "CGO_ENABLED=1") || !strings.Contains(stderr, "without cgo") {
			t.Errorf("exit %d, %q: want what a build without cgo lacks, and the fix", code, stderr)
		}
		// With no filter to compile, the missing reaper: refused, not
		// run with the program as pid 1.
		out, stderr, code := run("airlock-libuser-nocgo-nofilter", "sh", "-c", "kill -TERM $$")
		if code != 3 || !strings.Contains(stderr, "reaper") || !strings.Contains(stderr, "CGO_ENABLED=1") {
			t.Errorf("exit %d, %q %q: want the missing reaper named, and the fix", code, out, stderr)
		}
	})
}
