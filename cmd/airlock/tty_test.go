package main

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// --uid and --gid choose the program's ids inside (0 included); by
// default it is uid and gid 1000, "sandbox", and the result says so.
func TestUIDFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "1000 1000 sandbox 1000 /workspace"},
		{[]string{"--uid", "0"}, "0 1000 root 0 /workspace"},
		{[]string{"--uid", "0", "--gid", "0"}, "0 0 root 0 /workspace"},
		{[]string{"--uid", "4242", "--gid", "77"}, "4242 77 sandbox 4242 /workspace"},
	} {
		args := append(append([]string{}, c.args...), "--", "/bin/sh", "-c", `echo $(id -u) $(id -g) $(id -un) $(stat -c %u /workspace) $HOME`)
		code, out, errOut := airlock(t, "", args...)
		if code != 0 || strings.TrimSpace(out) != c.want {
			t.Errorf("%v: exit %d, %q (stderr %q), want %q", c.args, code, out, errOut, c.want)
		}
	}
	_, res, _ := result(t, "--uid", "0", "--", "true")
	if res.Enforced.UID != 0 || res.Enforced.GID != 1000 || !strings.HasPrefix(res.Enforced.UIDMap, "0 ") || !strings.HasPrefix(res.Enforced.GIDMap, "1000 ") {
		t.Errorf("enforced %+v: want uid 0, gid 1000 and their maps", res.Enforced)
	}
	// (The process backend on the host's network with Landlock's missing
	// parts accepted, so that only the uid is left to refuse on a kernel
	// without them: the cgroup v2 guest's.)
	for _, bad := range [][]string{{"--uid", "65534"}, {"--backend", "process", "--net", "host", "--best-effort=landlock", "--uid", "0"}} {
		if code, _, errOut := airlock(t, "", append(bad, "--", "true")...); code != exitSetup || !strings.Contains(errOut, "invalid uid") {
			t.Errorf("%v: exit %d, %q; want a refusal naming uid", bad, code, errOut)
		}
	}
}

// tar xf of an archive whose files belong to other ids exits 0 and
// extracts them as the program's own (as for any user bare).
func TestTarForeignOwners(t *testing.T) {
	testutil.RequireBinary(t, "tar")
	dir := testutil.WorldReadableDir(t)
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, f := range []struct {
		name string
		uid  int
	}{{"d/", 1234}, {"d/a.txt", 4321}} {
		h := &tar.Header{Name: f.name, Mode: 0o644, Uid: f.uid, Gid: f.uid, Typeflag: tar.TypeReg, Size: 2}
		if strings.HasSuffix(f.name, "/") {
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		w.WriteHeader(h)
		if h.Size > 0 {
			w.Write([]byte("x\n"))
		}
	}
	w.Close()
	if err := os.WriteFile(filepath.Join(dir, "in.tar"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := airlock(t, "", "--ro-bind", dir+":/in", "--", "/bin/sh", "-c", "tar xf /in/in.tar && stat -c '%n %u' d d/a.txt")
	if code != 0 || out != "d 1000\nd/a.txt 1000\n" {
		t.Errorf("tar xf: exit %d, %q (stderr %q)", code, out, errOut)
	}
}

// --tty: an interactive bash, driven through a pty as a person at a
// terminal would, answers, has job control (a controlling terminal of
// its own, /dev/console), and its exit code is airlock's.
func TestTTYInteractiveBash(t *testing.T) {
	testutil.RequireUserNS(t)
	testutil.RequireBinary(t, "bash")
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	cmd := exec.Command(bin, "run", "--tty", "--", "bash", "--norc", "-i")
	out := testutil.AtTerminal(t, cmd, "echo $((6*7)); tty; stty size; sleep 60 & jobs; kill %1; exit 3\n", 33, 77)
	for _, want := range []string{"\n42\n", "\n/dev/console\n", "\n33 77\n", "[1]+  Running"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q: %q", want, out)
		}
	}
	if cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("exit %d, want bash's 3; output %q", cmd.ProcessState.ExitCode(), out)
	}
}
