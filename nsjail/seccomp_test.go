package nsjail_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denyUname is a hand-written filter: uname(2) gets EPERM, everything else
// of the native arch is allowed, any other arch is killed.
func denyUname(t *testing.T) seccomp.Program { return denySyscall(t, unix.SYS_UNAME) }

// denySyscall is denyUname for the syscall nr.
func denySyscall(t *testing.T, nr uint32) seccomp.Program {
	p, err := seccomp.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipFalse: 4},
		bpf.LoadAbsolute{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
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

// A prepared sandbox (a warm pool's) gets its filter with its program,
// as a cold one does: whatever filter it was prepared with, the
// request's is the one in force, and it is loaded after the init's own
// rlimits and chdir, so a filter that denies those (here chdir) still
// runs its program.
func TestPreparedFilterComesWithProgram(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c",
		`uname -s 2>&1; cd /tmp 2>&1; grep -h -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status`}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		nr     uint32
		denied string
	}{{"uname", unix.SYS_UNAME, "Operation not permitted"}, {"chdir", unix.SYS_CHDIR, "can't cd"}} {
		prepSpec := spec
		prepSpec.Seccomp = &seccomp.Filter{Profile: "other", Program: denySyscall(t, unix.SYS_GETPID)}
		prep, err := nsjail.Prepare(t.Context(), prepSpec)
		if err != nil {
			t.Fatal(err)
		}
		req := spec
		req.Seccomp = &seccomp.Filter{Profile: "test", Rules: 1, Program: denySyscall(t, c.nr)}
		res, err := prep.Run(t.Context(), req)
		prep.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Status != nsjail.StatusOK || !strings.Contains(res.Stdout, c.denied) || res.Enforced.Seccomp != "test" {
			t.Errorf("%s denied: %s %q, enforced %q", c.name, res.Status, res.Stdout, res.Enforced.Seccomp)
		}
		for _, want := range []string{"Seccomp:\t2", "NoNewPrivs:\t1", "CapEff:\t0000000000000000"} {
			if !strings.Contains(res.Stdout, want) {
				t.Errorf("%s denied: %q lacks %q", c.name, res.Stdout, want)
			}
		}
	}
}
