package compat_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// jobScript exercises bash's job control: a background job, stopped and
// continued by signal, then killed; each step says what jobs shows. w
// waits (up to 10 s) for jobs to show a state, not a fixed 0.2 s: the
// stopped or continued job must run to report it, which in the loaded
// emulated guest can take longer.
const jobScript = `w() { for i in {1..200}; do [[ $(jobs) == *$1* ]] && break; sleep 0.05; done; }; ` +
	`sleep 30 & sleep 0.2; echo "mark 1 $(jobs)"; kill -STOP %1; w Stopped; echo "mark 2 $(jobs)"; ` +
	`kill -CONT %1; w Running; echo "mark 3 $(jobs)"; kill %1; wait %1; echo "mark 4 status $?"; echo "mark 5 $(tty)"; exit 5`

// The job-control step of the everyday tools: an interactive bash at a
// terminal (a pty this test drives), bare and under airlock run --tty,
// must report the same job states and exit the same.
func TestJobControlTTY(t *testing.T) {
	testutil.RequireUserNS(t)
	testutil.RequireBinary(t, "bash")
	cli := filepath.Join(testutil.BinDir(t), "airlock")
	bare, bareCode := atTerminal(t, "bash", "--norc", "-i")
	in, inCode := atTerminal(t, cli, "run", "--tty", "--", "bash", "--norc", "-i")
	// The terminal's name differs by design: a pty of the host bare,
	// /dev/console (the same pty, bound) inside.
	in = strings.Replace(in, "mark 5 /dev/console", "mark 5 TTY", 1)
	bare = regexp.MustCompile(`mark 5 /dev/pts/\d+`).ReplaceAllString(bare, "mark 5 TTY")
	t.Logf("bare and inside:\n%s", bare)
	if bare != in || bareCode != 5 || inCode != 5 {
		t.Errorf("job control differs:\nbare (exit %d):\n%s\ninside (exit %d):\n%s", bareCode, bare, inCode, in)
	}
}

// atTerminal runs argv on a new pty, types jobScript, and returns the
// "mark" lines it printed and its exit code.
func atTerminal(t *testing.T, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + cmd.Dir, "TERM=dumb", "LANG=C.UTF-8"}
	out := testutil.AtTerminal(t, cmd, jobScript+"\n", 0, 0)
	var marks []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "mark ") {
			marks = append(marks, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(marks, "\n"), cmd.ProcessState.ExitCode()
}
