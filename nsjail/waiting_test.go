package nsjail_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// outcome is what a caller sees of a run: the result's classified fields
// and the error's text.
func outcome(res *nsjail.Result, err error) string {
	var b strings.Builder
	if res != nil {
		fmt.Fprintf(&b, "status=%s code=%d signal=%q syscall=%q stdout=%q stderr=%q", res.Status, res.ExitCode, res.Signal, res.SeccompSyscall, res.Stdout, res.Stderr)
	}
	if err != nil {
		fmt.Fprintf(&b, " error=%q", err.Error())
	}
	return b.String()
}

// reaperResolver returns the spec an executor with the spawn helper (the
// reaper) resolves for args under p.
func reaperResolver(t *testing.T) func(args []string, p policy.Policy) nsjail.Spec {
	t.Helper()
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{SpawnPath: testutil.RequireReaper(t), WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return func(args []string, p policy.Policy) nsjail.Spec {
		t.Helper()
		spec, _, err := ex.Resolve(executor.Request{Args: args, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
}

// A prepared sandbox whose reaper waits (Spec.ReaperWaits: a warm pool's,
// with the default profile) starts the request's program itself: each
// case's outcome is the cold start's, field for field, from what the
// program prints to the setup error's text (its environment, working
// directory, rlimits, PATH lookup, the filter's denials and kill rules,
// and each step's failure). pid 1 is the waiting reaper (its command line
// says so: a check that this is the path under test).
func TestWaitingReaper(t *testing.T) {
	resolve := reaperResolver(t)
	dir := testutil.WorldReadableDir(t)
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("#!/bin/sh\necho plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run"), []byte("#!/bin/sh\necho run \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var hard unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &hard); err != nil {
		t.Fatal(err)
	}
	pol := func(rules ...policy.SyscallRule) policy.Policy {
		p := policy.Default()
		p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: dir, Target: "/opt/t"}}
		p.Seccomp.Rules = rules
		return p
	}
	type tc struct {
		args []string
		mod  func(*nsjail.Spec)
		p    policy.Policy
	}
	cases := map[string]tc{
		"env, dir, rlimits": {args: []string{"/bin/sh", "-c", `echo "$FOO|$PATH|$(pwd)|$(ulimit -n)|$(ulimit -c)"; tr '\0' '\n' </proc/1/cmdline | sed '2s/,.*//' | tr '\n' ' ' | head -c 20`},
			mod: func(s *nsjail.Spec) {
				s.Env, s.Dir = append(s.Env, "FOO=bar baz"), "/tmp"
				s.Rlimits = append(s.Rlimits, nsjail.Rlimit{Resource: unix.RLIMIT_NOFILE, Cur: 77, Max: 77})
			}},
		"path lookup": {args: []string{"run", "a", ""}, mod: func(s *nsjail.Spec) { s.Env = append(s.Env, "PATH=/nonexistent::/opt/t") }},
		"path lookup, relative dir": {args: []string{"run"}, mod: func(s *nsjail.Spec) {
			s.Env, s.Dir = append(s.Env, "PATH=/usr/bin:"), "/opt/t"
		}},
		"path skips the non-executable": {args: []string{"plain"}, mod: func(s *nsjail.Spec) { s.Env = append(s.Env, "PATH=/opt/t:/usr/bin") }},
		"not found":                     {args: []string{"no-such-program"}},
		"not executable":                {args: []string{"/opt/t/plain"}},
		"a directory":                   {args: []string{"/usr"}},
		"missing dir":                   {args: []string{"/bin/true"}, mod: func(s *nsjail.Spec) { s.Dir = "/no/such/dir" }},
		"rlimit above the hard limit": {args: []string{"/bin/true"}, mod: func(s *nsjail.Spec) {
			s.Rlimits = append(s.Rlimits, nsjail.Rlimit{Resource: unix.RLIMIT_NOFILE, Cur: hard.Max + 1, Max: hard.Max + 1})
		}},
		"filter denies":       {args: []string{"/bin/sh", "-c", "unshare -U true 2>&1; echo $?"}},
		"kill rule":           {args: []string{"/bin/uname"}, p: pol(policy.SyscallRule{Names: []string{"uname"}, Action: policy.ActKill})},
		"exit code and stdin": {args: []string{"/bin/sh", "-c", "read x; echo got $x; exit 3"}},
		"signals and fds":     {args: []string{"/bin/sh", "-c", "grep -E '^Sig(Blk|Ign|Cgt)' /proc/self/status; ls /proc/self/fd; ulimit -a"}},
		"no PATH": {args: []string{"sh", "-c", "echo $PATH"}, mod: func(s *nsjail.Spec) {
			s.Env = slices.DeleteFunc(slices.Clone(s.Env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
		}},
	}
	if hard.Max == unix.RLIM_INFINITY {
		delete(cases, "rlimit above the hard limit")
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := c.p
			if p.Seccomp.Rules == nil {
				p = pol()
			}
			spec := resolve(c.args, p)
			if c.mod != nil {
				c.mod(&spec)
			}
			run := func(s nsjail.Spec) (*nsjail.Result, error) {
				s.Stdin = strings.NewReader("in\n")
				return nsjail.Run(t.Context(), s)
			}
			cold := outcome(run(spec))
			ahead := spec
			ahead.ReaperWaits = true
			prep, err := nsjail.Prepare(t.Context(), ahead)
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close()
			if !nsjail.PreparedWaits(prep) {
				t.Fatal("the prepared sandbox's reaper does not wait")
			}
			s := spec
			s.Stdin = strings.NewReader("in\n")
			warm := outcome(prep.Run(t.Context(), s))
			if name == "env, dir, rlimits" {
				// The one difference: pid 1's command line.
				if !strings.Contains(warm, `bar baz|/usr/local/bin:/usr/bin:/bin|/tmp|77|0\nairlock-reaper 0 4 w"`) {
					t.Errorf("the program's environment, directory or rlimits, or pid 1: %s", warm)
				}
				warm = strings.Replace(warm, "airlock-reaper 0 4 w", "airlock-reaper 0 4 0", 1)
			}
			if warm != cold {
				t.Errorf("waiting reaper: %s\ncold:           %s", warm, cold)
			}
		})
	}
}

// A spec the waiting reaper cannot take (a NUL in an argument, which its
// exec could not pass; megabytes of arguments) does not match its
// prepared sandbox, nor does another filter: the pool runs those cold.
func TestWaitingReaperMatches(t *testing.T) {
	spec := reaperResolver(t)([]string{"/bin/true"}, policy.Default())
	spec.ReaperWaits = true
	prep, err := nsjail.Prepare(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	if !prep.Matches(&spec) {
		t.Fatal("the preparation's own spec does not match")
	}
	for name, mod := range map[string]func(*nsjail.Spec){
		"NUL":        func(s *nsjail.Spec) { s.Args = []string{"/bin/echo", "a\x00b"} },
		"huge":       func(s *nsjail.Spec) { s.Args = []string{"/bin/echo", strings.Repeat("x", 5<<20)} },
		"filter":     func(s *nsjail.Spec) { s.Seccomp = nil },
		"many rlims": func(s *nsjail.Spec) { s.Rlimits = make([]nsjail.Rlimit, 17) },
	} {
		s := spec
		mod(&s)
		if prep.Matches(&s) {
			t.Errorf("%s: matches the waiting reaper's sandbox", name)
		}
	}
	// At the reaper's bound (its argv and environment strings together),
	// a spec matches and runs; one string more does not match.
	bound := spec
	bound.Args = []string{"/bin/sh", "-c", `echo ran "$#"`}
	bound.Env = nil
	for range 1<<17 - len(bound.Args) {
		bound.Env = append(bound.Env, "A=") // short: execve's own bound is 2 MiB here
	}
	over := bound
	over.Env = append(slices.Clip(bound.Env), "W=")
	if prep.Matches(&over) {
		t.Errorf("%d strings match the waiting reaper's sandbox", len(over.Args)+len(over.Env))
	}
	if !prep.Matches(&bound) {
		t.Fatalf("%d strings do not match the waiting reaper's sandbox", len(bound.Args)+len(bound.Env))
	}
	res, err := prep.Run(t.Context(), bound)
	if err != nil || res.Status != nsjail.StatusOK || res.Stdout != "ran 0\n" {
		t.Fatalf("%v %+v", err, res)
	}
}

// ReaperWaits is for Prepare only: a cold run with it set still sends
// the init its filter, which the program runs under.
func TestWaitingReaperColdKeepsFilter(t *testing.T) {
	spec := reaperResolver(t)([]string{"/bin/sh", "-c", "grep Seccomp: /proc/self/status; unshare -U true 2>/dev/null; echo $?"}, policy.Default())
	spec.ReaperWaits = true
	res, err := nsjail.Run(t.Context(), spec)
	if err != nil || res.Status != nsjail.StatusOK {
		t.Fatalf("%v %+v", err, res)
	}
	if res.Stdout != "Seccomp:\t2\n1\n" {
		t.Errorf("a cold run with ReaperWaits: %q, want the filter in force (mode 2) and unshare refused", res.Stdout)
	}
}

// A step after "prepared" that fails (here the init's "ready" report: a
// filter that refuses sendmsg) fails Prepare with its stage, as it fails
// a cold start: no prepared sandbox waits with a dead init.
func TestWaitingReaperPrepareFails(t *testing.T) {
	p := policy.Default()
	p.Seccomp.Rules = []policy.SyscallRule{{Names: []string{"sendmsg"}, Action: policy.ActErrno, Errno: int(unix.EPERM)}}
	spec := reaperResolver(t)([]string{"/bin/true"}, p)
	_, coldErr := nsjail.Run(t.Context(), spec)
	spec.ReaperWaits = true
	prep, err := nsjail.Prepare(t.Context(), spec)
	if err == nil {
		prep.Close()
	}
	var se *policy.SetupError
	if !errors.As(err, &se) || se.Stage != "report ready" || !errors.Is(err, unix.EPERM) || coldErr == nil || err.Error() != coldErr.Error() {
		t.Errorf("Prepare: %v; want the cold start's error: %v", err, coldErr)
	}
}
