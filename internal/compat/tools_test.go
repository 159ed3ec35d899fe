package compat_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// tool is an everyday program exercised in steps, each a shell snippet
// run in the same directory (bare: a fresh one; inside: /workspace) with
// the files given. A step is case "tool.NAME.STEP": it passes when it
// exits 0 and, inside, prints what it printed bare. Outputs use relative
// paths, numeric ids and fixed times, so that bare and inside can agree.
type tool struct {
	Name   string
	Binary string // required on the host (and so inside, under /usr)
	Files  func() map[string][]byte
	Steps  []step
}

type step struct{ Name, Script string }

// mine prints each file's owner as "mine" when it is the running user,
// else its number: ids differ between bare and inside by design, owning
// one's files does not.
const mine = `owners() { me=$(id -u); for f in "$@"; do u=$(stat -c %u "$f"); [ "$u" = "$me" ] && u=mine; echo "$f $u"; done; }; `

var tools = []tool{
	{Name: "tar", Binary: "tar", Files: tarFiles, Steps: []step{
		{"list", `tar --numeric-owner -tvf in.tar`},
		{"extract", `mkdir x && tar -xf in.tar -C x && find x | sort && cat x/d/a.txt && stat -c '%n %a %Y' x/d x/d/a.txt x/d/b.txt`},
		{"owners", mine + `owners x/d x/d/a.txt x/d/b.txt`},
		{"create", `tar --numeric-owner --owner=1234 --group=1234 --mtime=2020-01-02 --sort=name -cf out.tar -C x d && tar --numeric-owner -tvf out.tar`},
		{"gzip", `tar -czf out.tgz -C x d && tar -tzf out.tgz | sort && tar -xzOf out.tgz d/a.txt`},
	}},
	{Name: "gzip", Binary: "gzip", Steps: []step{
		{"roundtrip", `seq 1 20000 > n.txt && gzip -9n -c n.txt > n.gz && gzip -t n.gz && gzip -l n.gz | awk 'NR==2{print $1, $2}' && gzip -dc n.gz | cksum`},
		{"inplace", `cp n.txt m.txt && gzip m.txt && ls m.txt* && gunzip m.txt.gz && cmp m.txt n.txt && echo same`},
	}},
	{Name: "git", Binary: "git", Steps: []step{
		{"init", `git init -q -b main r && git -C r rev-parse --is-inside-work-tree`},
		{"commit", `cd r && printf 'hi\n' > f && git add f && git commit -q -m first && printf 'ho\n' >> f && git commit -qam second && git log --format='%H %an <%ae> %ad %s' --date=iso-strict`},
		{"status", `cd r && echo new > g && git status --porcelain && git diff --stat HEAD~1 && git fsck --no-progress 2>&1 | grep -v '^Checking' ; true`},
	}},
	{Name: "gcc", Binary: "gcc", Files: gccFiles, Steps: []step{
		{"compile", `gcc -O2 -Wall -Werror -pthread -o hello hello.c && echo built`},
		{"run", `./hello; echo "exit $?"`},
	}},
	{Name: "node", Binary: "node", Files: nodeFiles, Steps: []step{
		{"workers", `node -e "$(cat main.js)"`},
	}},
}

// TestTools runs each tool's steps bare and inside, and compares them as
// TestCPython compares a module's cases.
func TestTools(t *testing.T) {
	testutil.RequireUserNS(t)
	for _, tl := range tools {
		t.Run(tl.Name, func(t *testing.T) {
			testutil.RequireBinary(t, tl.Binary)
			var files map[string][]byte
			if tl.Files != nil {
				files = tl.Files()
			}
			script := tl.script()
			args := []string{"/bin/sh", "-c", script}
			b, _ := bare(t, args, files, time.Minute)
			in, _ := inside(t, args, files, time.Minute)
			b.Cases, in.Cases = map[string]caseResult{}, map[string]caseResult{}
			bo, ins := tl.steps(t, b), tl.steps(t, in)
			for name, s := range bo {
				r := caseResult{Outcome: passed}
				if s.rc != 0 {
					r = caseResult{failed, fmt.Sprintf("exit %d: %s", s.rc, clip(s.out))}
				}
				b.Cases[name] = r
			}
			for name, s := range ins {
				r := caseResult{Outcome: passed}
				switch bs := bo[name]; {
				case s.rc != 0:
					r = caseResult{failed, fmt.Sprintf("exit %d: %s", s.rc, clip(s.out))}
				case s.out != bs.out:
					r = caseResult{failed, fmt.Sprintf("output differs: bare %q, inside %q", clip(bs.out), clip(s.out))}
				}
				in.Cases[name] = r
			}
			judge(t, "tool "+tl.Name, "tool."+tl.Name+".", b, in, nil)
		})
	}
}

// selfSignals are programs that end by what they do to themselves, run
// as the sandbox's program: DESIGN promises that signals, abort() and
// self-kills behave and are reported exactly as outside. Case
// "tool.signals.NAME" passes when the run ends as it does bare (status
// and output).
var selfSignals = []struct{ Name, Code string }{
	{"sigterm", "import os, signal; os.kill(os.getpid(), signal.SIGTERM); print('survived')"},
	{"sigkill", "import os, signal; os.kill(os.getpid(), signal.SIGKILL); print('survived')"},
	{"abort", "import os; os.abort()"},
	{"sigint", "import signal; signal.raise_signal(signal.SIGINT)"},
	{"exit", "print('bye'); raise SystemExit(3)"},
}

// TestSelfSignals runs each of selfSignals bare and inside and compares
// them as TestCPython compares a module's cases.
func TestSelfSignals(t *testing.T) {
	testutil.RequireUserNS(t)
	testutil.RequireBinary(t, "python3")
	b := &run{Where: "bare", Status: "exit 0", Cases: map[string]caseResult{}}
	in := &run{Where: "inside", Status: "exit 0", Cases: map[string]caseResult{}}
	for _, p := range selfSignals {
		id := "tool.signals." + p.Name
		args := []string{python, "-c", p.Code}
		pb, _ := bare(t, args, nil, time.Minute)
		pi, _ := inside(t, args, nil, time.Minute)
		b.Wall, in.Wall = b.Wall+pb.Wall, in.Wall+pi.Wall
		b.Cases[id] = caseResult{Outcome: passed}
		if got, want := pi.Status+": "+clip(string(pi.Log)), pb.Status+": "+clip(string(pb.Log)); got != want {
			in.Cases[id] = caseResult{failed, fmt.Sprintf("bare %q, inside %q", want, got)}
		} else {
			in.Cases[id] = caseResult{Outcome: passed}
		}
	}
	judge(t, "tool signals", "tool.signals.", b, in, nil)
}

// script is the shell script that runs the steps, each in a subshell,
// and reports each as "@@step ID rc=N" and its output.
func (tl tool) script() string {
	var b strings.Builder
	b.WriteString("umask 022\nexport GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.com GIT_AUTHOR_DATE=2020-01-02T03:04:05Z GIT_COMMITTER_DATE=2020-01-02T03:04:05Z\n")
	for _, s := range tl.Steps {
		fmt.Fprintf(&b, "out=$( { %s\n} 2>&1 ); rc=$?; printf '@@step %s rc=%%d\\n%%s\\n' \"$rc\" \"$out\"\n", s.Script, "tool."+tl.Name+"."+s.Name)
	}
	return b.String()
}

type stepResult struct {
	rc  int
	out string
}

var stepHead = regexp.MustCompile(`(?m)^@@step (\S+) rc=(\d+)\n`)

// steps parses a run's step reports; every step must have one.
func (tl tool) steps(t *testing.T, r *run) map[string]stepResult {
	t.Helper()
	out := map[string]stepResult{}
	log := string(r.Log)
	idx := stepHead.FindAllStringSubmatchIndex(log, -1)
	for i, m := range idx {
		end := len(log)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		rc, _ := strconv.Atoi(log[m[4]:m[5]])
		out[log[m[2]:m[3]]] = stepResult{rc, strings.TrimRight(log[m[1]:end], "\n")}
	}
	if len(out) != len(tl.Steps) {
		t.Fatalf("%s %s: %d step reports of %d (%s):\n%s", r.Where, tl.Name, len(out), len(tl.Steps), r.Status, tail(r.Log, 30))
	}
	return out
}

// tarFiles is an archive whose entries belong to other users (1234 and
// 4321), with fixed modes and times.
func tarFiles() map[string][]byte {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	mt := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(h *tar.Header, body string) {
		h.ModTime, h.Size, h.Format = mt, int64(len(body)), tar.FormatPAX
		if err := w.WriteHeader(h); err != nil {
			panic(err)
		}
		w.Write([]byte(body))
	}
	add(&tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o750, Uid: 1234, Gid: 1234}, "")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "d/a.txt", Mode: 0o640, Uid: 1234, Gid: 1234}, "alpha\n")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "d/b.txt", Mode: 0o600, Uid: 4321, Gid: 4321}, "beta\n")
	add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "d/link", Linkname: "a.txt", Mode: 0o777, Uid: 1234, Gid: 1234}, "")
	w.Close()
	return map[string][]byte{"in.tar": buf.Bytes()}
}

// gccFiles is a C program that forks, waits, runs a thread and exits 3.
func gccFiles() map[string][]byte {
	return map[string][]byte{"hello.c": []byte(`#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sum(void *arg) {
	long s = 0;
	for (long i = 0; i < 1000000; i++) s += i;
	*(long *)arg = s;
	return NULL;
}

int main(void) {
	pthread_t th;
	long s = 0;
	pthread_create(&th, NULL, sum, &s);
	pthread_join(th, NULL);
	printf("hello, sum %ld\n", s);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) _exit(7);
	int st;
	waitpid(pid, &st, 0);
	printf("child exited %d\n", WEXITSTATUS(st));
	return 3;
}
`)}
}

// nodeFiles is a script with a worker thread and child processes.
func nodeFiles() map[string][]byte {
	return map[string][]byte{"main.js": []byte(`
const { Worker } = require('worker_threads');
const cp = require('child_process');
const w = new Worker("const {parentPort} = require('worker_threads'); let s = 0; for (let i = 0; i < 1e6; i++) s += i; parentPort.postMessage(s);", { eval: true });
w.on('message', (m) => console.log('worker', m));
w.on('exit', (code) => {
  console.log('worker exit', code);
  console.log('execFileSync', cp.execFileSync('/bin/sh', ['-c', 'echo child $((6*7))']).toString().trim());
  console.log('spawnSync status', cp.spawnSync(process.execPath, ['-e', 'process.exit(7)']).status);
  cp.exec('echo async', (err, out) => console.log('exec', err, out.trim()));
});
`)}
}
