package compat_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// TestCauses runs each cause's check: a cause whose reason no longer
// holds fails here, naming the exceptions to remove with it.
func TestCauses(t *testing.T) {
	testutil.RequireUserNS(t)
	testutil.RequireBinary(t, "python3")
	for _, c := range causes {
		t.Run(c.Name, func(t *testing.T) {
			c.Check(t)
			if t.Failed() {
				var ids []string
				for _, e := range c.Cases {
					ids = append(ids, e.Case)
				}
				t.Logf("if the cause is gone, remove its exceptions from table_test.go: %s", strings.Join(ids, ", "))
			}
		})
	}
}

// probeInside runs code with python3 -c as the sandbox's program (its
// pid 1 program, under the default policy) and returns its output; the
// probe must exit 0.
func probeInside(t *testing.T, code string) string {
	t.Helper()
	res := testutil.Run(t, []string{python, "-c", code}, nil)
	if res.Status != nsjail.StatusOK {
		t.Fatalf("probe inside: %s exit %d\nstdout: %s\nstderr: %s", res.Status, res.ExitCode, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(res.Stdout)
}

// probeBare runs code with python3 -c here, in a temp dir, and returns
// its output and wait error.
func probeBare(t *testing.T, code string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), python, "-c", code)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// want fails t unless got is want, naming what the check shows.
func want(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// errnoOf is a python helper printing the errno a call raises, or "ok".
const errnoOf = `
import os, errno
def errnoOf(f, *a, **kw):
    try:
        f(*a, **kw)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
`

// checkFileSize: the default policy's RLIMIT_FSIZE (1 GiB) is what the
// program sees, where bare has none: regrtest's test_fsize_ismax wants
// RLIM_INFINITY, and test_mmap's large-file cases write past 4 GiB and
// skip on EFBIG.
func checkFileSize(t *testing.T) {
	code := errnoOf + `
import resource
print(resource.getrlimit(resource.RLIMIT_FSIZE))
fd = os.open("/tmp/big", os.O_WRONLY | os.O_CREAT)
os.lseek(fd, 4 << 30, os.SEEK_SET)
print(errnoOf(os.write, fd, b"x"))
`
	lim := fmt.Sprint(policy.DefaultFileSize)
	want(t, "inside: RLIMIT_FSIZE and a write at 4 GiB", probeInside(t, code), "("+lim+", "+lim+")\nEFBIG")
	out, err := probeBare(t, `import resource; print(resource.getrlimit(resource.RLIMIT_FSIZE) == (resource.RLIM_INFINITY,) * 2)`)
	if err != nil || out != "True" {
		t.Errorf("bare: RLIMIT_FSIZE is not unlimited here (%q, %v): the cases would not pass bare", out, err)
	}
}

// checkNoCapabilities: the program holds no capability in any set, so
// what real root may do bare (chown to any id, setgroups, trusted.*
// extended attributes, sethostname) fails inside with EPERM. This stays
// after the identity fix: a sandboxed program is never real root.
func checkNoCapabilities(t *testing.T) {
	code := errnoOf + `
import socket
caps = {l.split(":")[0]: l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")}
print(sorted(set(caps.values())))
open("/tmp/f", "w").close()
print(errnoOf(os.setgroups, [0]), errnoOf(os.setxattr, "/tmp/f", "trusted.x", b"1"), errnoOf(socket.sethostname, "x"))
`
	want(t, "inside: capability sets; setgroups, a trusted.* xattr, sethostname", probeInside(t, code),
		"['0000000000000000']\nEPERM EPERM EPERM")
	if !testutil.Rootless() {
		out, err := probeBare(t, errnoOf+`
open("f", "w").close()
print(errnoOf(os.setxattr, "f", "trusted.x", b"1"), errnoOf(os.chown, "f", 1234, 1234))`)
		if err != nil || out != "ok ok" {
			t.Errorf("bare as root: trusted.* xattr and chown: %q, %v; want ok ok", out, err)
		}
	}
}

// TestUnmappedIDsAnswerEPERM: the program is uid and gid 1000 of a user
// namespace that maps those two ids only. The kernel's answer to a change
// to any other id is EINVAL (no mapping); the filter answers EPERM first,
// as bare an unprivileged user is answered (seccomp.IDs), so CPython's
// test_os test_chown_without_permission and test_subprocess test_user
// and test_group pass inside as bare. A change to the mapped ids still
// succeeds.
func TestUnmappedIDsAnswerEPERM(t *testing.T) {
	code := errnoOf + `
import subprocess
print(os.getuid(), os.getgid(), len(open("/proc/self/uid_map").read().splitlines()), len(open("/proc/self/gid_map").read().splitlines()))
open("/tmp/f", "w").close()
print(errnoOf(os.chown, "/tmp/f", 1234, 1234), errnoOf(os.chown, "/tmp/f", -1, 0), errnoOf(subprocess.run, ["/bin/true"], user=65534), errnoOf(subprocess.run, ["/bin/true"], group=0))
print(errnoOf(os.setresuid, 1000, 0, -1), errnoOf(os.setgid, 0), errnoOf(os.setgroups, [0]))
print(errnoOf(os.chown, "/tmp/f", 1000, 1000), errnoOf(os.setuid, 1000), errnoOf(subprocess.run, ["/bin/true"], user=1000, group=1000))
`
	want(t, "inside: uid, gid, map lines; id changes to unmapped ids, then to the mapped ones", probeInside(t, code),
		"1000 1000 1 1\nEPERM EPERM EPERM EPERM\nEPERM EPERM EPERM\nok ok ok")
}

// TestTableWellFormed: every cause has a reason, a check and cases;
// every case names a module or tool of the table; none is listed twice
// for the same pass.
func TestTableWellFormed(t *testing.T) {
	known := map[string]bool{}
	for _, m := range modules {
		known["test."+m.Name+"."] = true
	}
	for _, tl := range tools {
		known["tool."+tl.Name+"."] = true
	}
	known["tool.signals."] = true
	seen := map[string]string{}
	for _, c := range causes {
		if c.Why == "" || c.Check == nil || len(c.Cases) == 0 || (c.Kind != design && c.Kind != open) {
			t.Errorf("cause %q: needs a kind, a reason, a check and cases", c.Name)
		}
		for _, e := range c.Cases {
			parts := strings.SplitN(e.Case, ".", 3)
			if len(parts) < 3 || !known[parts[0]+"."+parts[1]+"."] {
				t.Errorf("cause %q: %s names no module or tool of the table", c.Name, e.Case)
			}
			for _, m := range []mode{rootOnly, rootlessOnly} {
				if e.Mode != both && e.Mode != m {
					continue
				}
				key := fmt.Sprint(m, e.Case)
				if prev, ok := seen[key]; ok {
					t.Errorf("%s is listed twice for one pass: under %q and %q", e.Case, prev, c.Name)
				}
				seen[key] = c.Name
			}
		}
	}
}
