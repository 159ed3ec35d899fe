package nsjail_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denyUname is a hand-written filter: uname(2) gets EPERM, everything else
// of the native arch is allowed, any other arch is killed.
func denyUname(t *testing.T) seccomp.Program {
	p, err := seccomp.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipFalse: 4},
		bpf.LoadAbsolute{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_UNAME, SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A filter in the spec is loaded last, on every task of the program.
func TestSeccompProgramLoaded(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c",
		`uname -s 2>&1; (sleep 0.2 &); grep -h -E '^(Seccomp|NoNewPrivs):' /proc/[0-9]*/status | sort | uniq -c`}})
	if err != nil {
		t.Fatal(err)
	}
	spec.Seccomp = &seccomp.Filter{Profile: "test", Rules: 1, Program: denyUname(t)}
	res, err := nsjail.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "Operation not permitted") {
		t.Errorf("uname was not denied: %q", res.Stdout)
	}
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n")[1:] {
		if f := strings.Fields(l); len(f) != 3 || f[2] != map[string]string{"Seccomp:": "2", "NoNewPrivs:": "1"}[f[1]] {
			t.Errorf("a task is not filtered: %q", l)
		}
	}
	if res.Enforced.Seccomp != "test" || res.Enforced.SeccompInstructions != 7 {
		t.Errorf("enforced.seccomp = %q", res.Enforced.Seccomp)
	}
}

// The default filter lets an init confined ahead (a warm pool's) make
// every call it still makes before exec, so a default pool loads it
// ahead; a rule against one of them moves the load to the request.
func TestAfterAheadFilter(t *testing.T) {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rules []policy.SyscallRule
		want  string
	}{
		{nil, ""},
		{[]policy.SyscallRule{{Names: []string{"chdir"}, Action: policy.ActErrno}}, "chdir"},
		{[]policy.SyscallRule{{Names: []string{"prlimit64"}, Action: policy.ActKill}}, "prlimit64"},
		{[]policy.SyscallRule{{Names: []string{"getcwd"}, Action: policy.ActErrno}}, ""},
	} {
		p := policy.Default()
		p.Seccomp.Rules = c.rules
		spec, _, err := ex.Resolve(executor.Request{Args: []string{"true"}, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		denied, err := spec.Seccomp.Program.FirstDenied(nsjail.AfterAheadFilter())
		if err != nil || !strings.HasPrefix(denied, c.want) || (c.want == "") != (denied == "") {
			t.Errorf("rules %+v: denied %q (%v), want %q", c.rules, denied, err, c.want)
		}
	}
}
