package nsjail_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The sandbox has a private devpts at /dev/pts, with /dev/ptmx: programs
// open ptys (pty.openpty, script, expect), new ones owned by the program
// with mode 0620, and none of the host's ptys is there.
func TestDevpts(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	res := testutil.Run(t, []string{"python3", "-c", `
import os, pty
m, s = pty.openpty()
os.write(m, b"ping\n")
st = os.stat(os.ttyname(s))
print(os.ttyname(s), oct(st.st_mode & 0o777), st.st_uid == os.getuid(), os.read(s, 5))
print(sorted(os.listdir("/dev/pts")), os.readlink("/dev/ptmx"))
`}, nil)
	want := "/dev/pts/0 0o620 True b'ping\\n'\n['0', 'ptmx'] pts/ptmx\n"
	if res.Stdout != want {
		t.Errorf("got %q (stderr %q), want %q", res.Stdout, res.Stderr, want)
	}
	out := testutil.Sh(t, `grep ' /dev/pts ' /proc/self/mountinfo`, nil)
	if f := strings.Fields(out); len(f) < 10 || f[7] != "devpts" || !strings.Contains(out, "nosuid") || !strings.Contains(out, "ptmxmode=666") {
		t.Errorf("/dev/pts mount %q: want a devpts of its own, nosuid, ptmxmode 666", out)
	}
}
