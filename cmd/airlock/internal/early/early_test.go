//go:build linux

package early

import (
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// The constants this package keeps for itself, because it cannot import
// their packages (it is initialized before them), are theirs.
func TestConstantsAreTheirPackages(t *testing.T) {
	p := policy.Default()
	uid, gid := p.InsideIDs()
	if uid != insideUID || gid != insideGID {
		t.Errorf("the default policy's ids inside are %d:%d, this package launches with %d:%d", uid, gid, insideUID, insideGID)
	}
	if oPath != unix.O_PATH || cgroup2Magic != unix.CGROUP2_SUPER_MAGIC {
		t.Errorf("O_PATH %#x (unix %#x), cgroup2 magic %#x (unix %#x)", oPath, unix.O_PATH, cgroup2Magic, unix.CGROUP2_SUPER_MAGIC)
	}
}

// Only `airlock run` with launch-neutral flags and a program, and
// `airlock exec` with them and -c, launch:
// every flag that changes what is launched (the binaries, namespaces,
// ids, streams), or that ends the command before a run, keeps it out.
func TestRunsAhead(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"airlock", "run", "--", "/bin/true"}, true},
		{[]string{"airlock", "run", "/bin/true"}, true},
		{[]string{"airlock", "run", "--timeout", "5s", "--memory=256MiB", "-pids", "10", "--", "python3", "-c", "pass"}, true},
		{[]string{"airlock", "run", "--best-effort", "--setenv", "A=1", "--env-pass=HOME", "sh"}, true},
		{[]string{"airlock", "run", "--ro-bind", "/data", "--tmpfs=/scratch:1m", "--workspace", "/w", "--chdir", "/w", "sh"}, true},
		{[]string{"airlock", "run", "--cpus", "0.5", "--cpu-time", "1s", "--kill-grace", "1s", "--bind", "/x", "sh", "--json"}, true}, // the program's own flag
		{[]string{"airlock", "run"}, false},
		{[]string{"airlock", "run", "--"}, false},
		{[]string{"airlock", "run", "--timeout"}, false},
		{[]string{"airlock", "run", "--timeout", "5s"}, false},
		{[]string{"airlock", "exec", "--lang", "python", "-c", "pass"}, true},
		{[]string{"airlock", "exec", "--lang=python", "--timeout", "5s", "-c=pass", "--", "arg"}, true},
		{[]string{"airlock", "exec", "-c", "pass", "--lang", "python", "arg1", "--json"}, true}, // the code's own arguments
		{[]string{"airlock", "exec", "--lang", "python", "prog.py"}, false},                     // a FILE: maybe one only airlock-daemon reads
		{[]string{"airlock", "exec", "--lang", "python", "-"}, false},                           // the code on stdin: the program has none
		{[]string{"airlock", "exec", "--lang", "python"}, false},
		{[]string{"airlock", "exec", "--json", "--lang", "python", "-c", "pass"}, false},
		{[]string{"airlock", "doctor", "--json"}, false},
		{[]string{"airlock", "version"}, false},
		{[]string{"airlock-init"}, false},
		{[]string{"airlock", "run", "--json", "--", "true"}, false},
		{[]string{"airlock", "run", "--tty", "sh"}, false},
		{[]string{"airlock", "run", "--net", "host", "sh"}, false},
		{[]string{"airlock", "run", "--net=loopback", "sh"}, false},
		{[]string{"airlock", "run", "--uid", "0", "id"}, false},
		{[]string{"airlock", "run", "--gid=0", "id"}, false},
		{[]string{"airlock", "run", "--policy", "p.yaml", "sh"}, false},
		{[]string{"airlock", "run", "--preset", "default", "sh"}, false},
		{[]string{"airlock", "run", "--backend", "process", "sh"}, false},
		{[]string{"airlock", "run", "--max-output", "1k", "sh"}, false},
		{[]string{"airlock", "run", "--verbose", "sh"}, false},
		{[]string{"airlock", "run", "--help"}, false},
		{[]string{"airlock", "run", "-h", "sh"}, false},
		{[]string{"airlock", "run", "--timeout", "5s", "--json", "sh"}, false},
		{[]string{"airlock", "run", "--memory", "--json", "sh"}, true}, // --json is --memory's value here, as for Go's flag package
	} {
		if got := runsAhead(c.args); got != c.want {
			t.Errorf("runsAhead(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
