package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// ignoreThen is a launcher that ignores the signals it is given by
// number and blocks those given as bN, then execs the rest of its
// arguments: a caller of airlock (or of the program, bare) that ignores
// and blocks them.
const ignoreThen = `import os, signal, sys
n = sys.argv.index("--")
for s in sys.argv[1:n]:
    if s.startswith("b"):
        signal.pthread_sigmask(signal.SIG_BLOCK, [int(s[1:])])
    else:
        signal.signal(int(s), signal.SIG_IGN)
os.execv(sys.argv[n + 1], sys.argv[n + 1:])`

// The program starts with the signals its caller ignored ignored, as it
// does bare, though Go's runtime in airlock handles most of them, and
// with those its caller blocked blocked: on an init started with the CLI
// (run, exec -c), one started later (--json), and through airlock-daemon
// (exec of code on stdin). SIGCHLD among them: the reaper still reaps
// the program.
func TestCLISignalDispositions(t *testing.T) {
	testutil.RequireUserNS(t)
	python := testutil.RequireBinary(t, "python3")
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	read := "grep -E '^Sig(Blk|Ign)' /proc/self/status" // grep's own: what it inherited
	sets := [][]string{
		{"13", "15", "3", "10"},            // PIPE TERM QUIT USR1
		{"1", "2", "b10", "b15"},           // HUP INT, which Go's runtime keeps ignored; USR1 TERM blocked
		{"17", "12", "40", "b17"},          // CHLD USR2 and a real-time one; CHLD blocked too
		{"b2", "b11", "b23", "b28", "b45"}, // INT, SEGV (Go's runtime unblocks it), URG (its preemption signal), WINCH and a real-time one blocked
		{},
	}
	if testutil.GuestTrim() {
		// In the cgroup v2 guest the first set only: what a process
		// inherits across fork and exec is the same on either kernel, and
		// the CLI's paths to it (an init started with the CLI, one
		// started later, the daemon) each run below; every set runs in
		// the host passes.
		sets = sets[:1]
	}
	for _, ignored := range sets {
		launcher := append([]string{python, "-c", ignoreThen}, append(ignored, "--")...)
		sigIgn := func(name string, args []string, stdin string) string {
			cmd := exec.Command(launcher[0], append(launcher[1:], args...)...)
			cmd.Stdin = strings.NewReader(stdin)
			code, out, errs := runCLI(t, cmd)
			if code != 0 {
				t.Fatalf("%v %s: exit %d: %s %s", ignored, name, code, out, errs)
			}
			var got []string
			for _, l := range strings.Split(strings.NewReplacer(`\t`, "\t", `\n`, "\n").Replace(out), "\n") {
				for _, k := range []string{"SigBlk:\t", "SigIgn:\t"} {
					if i := strings.Index(l, k); i >= 0 {
						got = append(got, strings.Trim(l[i:], "\",\n "))
					}
				}
			}
			if len(got) != 2 {
				t.Fatalf("%v %s: no SigBlk and SigIgn in %q", ignored, name, out)
			}
			return strings.Join(got, " ")
		}
		grep := []string{"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"}
		// A shell resets SIGCHLD: the exec cases compare with a shell.
		bareGrep := sigIgn("bare grep", grep, "")
		bareSh := sigIgn("bare sh", []string{"/bin/sh", "-c", "exec " + read}, "")
		for name, c := range map[string]struct {
			args        []string
			stdin, want string
		}{
			"run":        {append([]string{bin, "run", "--"}, grep...), "", bareGrep},
			"json":       {append([]string{bin, "run", "--json", "--"}, grep...), "", bareGrep},
			"exec code":  {[]string{bin, "exec", "--lang", "sh", "-c", "exec " + read}, "", bareSh},
			"exec stdin": {[]string{bin, "exec", "--lang", "sh", "-"}, "exec " + read + "\n", bareSh},
		} {
			if got := sigIgn(name, c.args, c.stdin); got != c.want {
				t.Errorf("%v %s: the program's %q, bare %q", ignored, name, got, c.want)
			}
		}
	}
}
