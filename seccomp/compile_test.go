//go:build linux

package seccomp

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// eval runs p over a crafted seccomp_data (evalArch).
func eval(t *testing.T, p Program, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	ret, err := evalArch(p, arch, nr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return ret
}

func compileDefault(t *testing.T, opts Options, rules ...policy.SyscallRule) Program {
	t.Helper()
	p, err := DefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	p.Override(rules...)
	prog, err := Compile(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func TestDefaultProfileDecisions(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the table below uses x86_64 numbers")
	}
	prog := compileDefault(t, Options{})
	const native = unix.AUDIT_ARCH_X86_64
	eperm, enosysRet := uint32(retErrno|uint32(unix.EPERM)), uint32(retErrno|enosys)
	for _, tc := range []struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
		want uint32
	}{
		{"getpid", native, unix.SYS_GETPID, nil, retAllow},
		{"read", native, unix.SYS_READ, nil, retAllow},
		{"i386 int 0x80", auditI386, 20, nil, retKillProcess},
		{"x32 getpid", native, x32Bit | unix.SYS_GETPID, nil, retKillProcess},
		{"x32 unshare", native, x32Bit | 272, []uint64{unix.CLONE_NEWUSER}, retKillProcess},
		{"clone3", native, unix.SYS_CLONE3, nil, enosysRet},
		{"unknown 1000", native, 1000, nil, enosysRet},
		{"unknown in the gap", native, 400, nil, enosysRet},
		{"newest known+1", native, maxNr(t) + 1, nil, enosysRet},
		{"mount", native, unix.SYS_MOUNT, nil, eperm},
		{"unshare", native, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWUSER}, eperm},
		{"setns", native, unix.SYS_SETNS, nil, eperm},
		{"keyctl", native, unix.SYS_KEYCTL, nil, eperm},
		{"bpf", native, unix.SYS_BPF, nil, eperm},
		{"perf_event_open", native, unix.SYS_PERF_EVENT_OPEN, nil, eperm},
		{"userfaultfd", native, unix.SYS_USERFAULTFD, nil, eperm},
		{"io_uring_setup", native, unix.SYS_IO_URING_SETUP, nil, eperm},
		{"ptrace", native, unix.SYS_PTRACE, nil, eperm},
		{"process_vm_readv", native, unix.SYS_PROCESS_VM_READV, nil, eperm},
		{"open_by_handle_at", native, unix.SYS_OPEN_BY_HANDLE_AT, nil, eperm},
		{"kexec_load", native, unix.SYS_KEXEC_LOAD, nil, eperm},
		{"init_module", native, unix.SYS_INIT_MODULE, nil, eperm},
		{"modify_ldt", native, unix.SYS_MODIFY_LDT, nil, eperm},
		{"ioctl TCGETS", native, unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, retAllow},
		{"ioctl TIOCSTI", native, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, eperm},
		{"ioctl TIOCSTI high bits", native, unix.SYS_IOCTL, []uint64{0, 0x123<<32 | unix.TIOCSTI}, eperm},
		{"ioctl TIOCLINUX", native, unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, eperm},
		{"clone thread", native, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, retAllow},
		{"clone newuser", native, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"clone newns", native, unix.SYS_CLONE, []uint64{unix.CLONE_NEWNS}, eperm},
		{"socket inet", native, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, 0}, retAllow},
		{"socket unix", native, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, retAllow},
		{"socket netlink route", native, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, retAllow},
		{"socket netlink netfilter", native, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER}, eperm},
		{"socket packet", native, unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
		{"socket vsock", native, unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, eperm},
		{"socket alg", native, unix.SYS_SOCKET, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, eperm},
		{"personality query", native, unix.SYS_PERSONALITY, []uint64{0xffffffff}, retAllow},
		{"personality linux32", native, unix.SYS_PERSONALITY, []uint64{8}, eperm},
	} {
		if got := eval(t, prog, tc.arch, tc.nr, tc.args...); got != tc.want {
			t.Errorf("%s: got %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if len(prog) > 1000 {
		t.Errorf("default filter is %d instructions", len(prog))
	}
}

func maxNr(t *testing.T) uint32 {
	var m uint32
	for _, nr := range sysnums[runtime.GOARCH] {
		m = max(m, nr)
	}
	return m
}

// Rules replace the profile's rules for their names; kill compiles to
// KILL_PROCESS, or to USER_NOTIF when the supervisor listens.
func TestRulesOverrideAndKill(t *testing.T) {
	native := arches[runtime.GOARCH].audit
	getpid, getppid := sysnums[runtime.GOARCH]["getpid"], sysnums[runtime.GOARCH]["getppid"]
	rules := []policy.SyscallRule{
		{Names: []string{"getpid"}, Action: policy.ActErrno, Errno: 13},
		{Names: []string{"getppid"}, Action: policy.ActKill},
	}
	prog := compileDefault(t, Options{}, rules...)
	if got := eval(t, prog, native, getpid); got != retErrno|13 {
		t.Errorf("getpid: %#x, want ERRNO(13)", got)
	}
	if got := eval(t, prog, native, getppid); got != retKillProcess {
		t.Errorf("getppid: %#x, want KILL_PROCESS", got)
	}
	prog = compileDefault(t, Options{Notify: true}, rules...)
	if got := eval(t, prog, native, getppid); got != retUserNotif {
		t.Errorf("getppid with notify: %#x, want USER_NOTIF", got)
	}
	// A foreign ABI is notified too, so that the supervisor names it.
	if got := eval(t, prog, auditI386, 20); got != retUserNotif {
		t.Errorf("i386 getpid with notify: %#x, want USER_NOTIF", got)
	}
	if runtime.GOARCH == "amd64" {
		if got := eval(t, prog, native, x32Bit|getpid); got != retUserNotif {
			t.Errorf("x32 getpid with notify: %#x, want USER_NOTIF", got)
		}
		// -1 (a tracer's skip) is no x32 call: it goes on to libseccomp.
		for _, o := range []Options{{}, {Notify: true}} {
			if got := eval(t, compileDefault(t, o), native, 0xffffffff); got == retUserNotif || got == retKillProcess {
				t.Errorf("syscall -1 (notify %v): %#x, want it let through to fail", o.Notify, got)
			}
		}
	}
}

// A deny rule naming an unknown syscall is an error, never dropped; an
// allow rule for one is skipped (the default denies it).
func TestUnknownNamesFailClosed(t *testing.T) {
	p, _ := DefaultProfile()
	p.Override(policy.SyscallRule{Names: []string{"no_such_syscall"}, Action: policy.ActErrno})
	if _, err := Compile(p, Options{}); !errors.Is(err, ErrUnknownSyscall) {
		t.Errorf("deny of an unknown name: %v", err)
	}
	p, _ = DefaultProfile()
	p.Override(policy.SyscallRule{Names: []string{"no_such_syscall"}, Action: policy.ActAllow})
	if _, err := Compile(p, Options{}); err != nil {
		t.Errorf("allow of an unknown name: %v", err)
	}
}

// A conditional deny on a syscall another rule allows is checked first,
// whatever the order of the rules (libseccomp alone would drop it).
func TestDenyBeatsAllow(t *testing.T) {
	native := arches[runtime.GOARCH].audit
	write := sysnums[runtime.GOARCH]["write"]
	prog, err := Compile(&Profile{Name: "t", DefaultAction: policy.ActErrno, DefaultErrno: 1, Rules: []policy.SyscallRule{
		{Names: []string{"write"}, Action: policy.ActAllow},
		{Names: []string{"write"}, Action: policy.ActErrno, Errno: 1, Args: []policy.ArgCondition{{Index: 0, Op: policy.OpEq, Value: 2}}},
		{Names: []string{"write"}, Action: policy.ActKill, Args: []policy.ArgCondition{{Index: 0, Op: policy.OpMaskedEq, Mask: 0xff, Value: 7}}},
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fd   uint64
		want uint32
	}{{1, retAllow}, {2, retErrno | 1}, {2 | 1<<32, retAllow}, {0x107, retKillProcess}, {0x1_0000_0007, retKillProcess}} {
		if got := eval(t, prog, native, write, tc.fd); got != tc.want {
			t.Errorf("write(%#x): %#x, want %#x", tc.fd, got, tc.want)
		}
	}
}

func TestImportDockerProfile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/p.json"
	doc := `{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
	  "syscalls": [
	    {"names": ["read", "write", "exit_group"], "action": "SCMP_ACT_ALLOW"},
	    {"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22},
	    {"names": ["kill"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 1, "value": 255, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
	    {"names": ["getppid"], "action": "SCMP_ACT_KILL_PROCESS"},
	    {"names": ["brk"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["` + runtime.GOARCH + `", "amd64", "arm64"]}}
	  ]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(policy.Seccomp{Profile: path})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	native, table := arches[runtime.GOARCH].audit, sysnums[runtime.GOARCH]
	for name, want := range map[string]uint32{"read": retAllow, "getpid": retErrno | 22, "getppid": retKillProcess, "brk": retErrno | 1, "openat": retErrno | 1} {
		if got := eval(t, prog, native, table[name]); got != want {
			t.Errorf("%s: %#x, want %#x", name, got, want)
		}
	}
	if got := eval(t, prog, native, table["kill"], 1, 9); got != retErrno|1 {
		t.Errorf("kill(1, 9) with masked_eq(255, 0): %#x", got)
	}
	if got := eval(t, prog, native, table["kill"], 1, 256); got != retAllow {
		t.Errorf("kill(1, 256): %#x", got)
	}
	os.WriteFile(path, []byte(`{"defaultAction": "SCMP_ACT_TRACE"}`), 0o644)
	if _, err := Resolve(policy.Seccomp{Profile: path}); !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("trace default: %v", err)
	}
}

func TestDisassemble(t *testing.T) {
	lines := Disassemble(compileDefault(t, Options{}))
	if !strings.Contains(lines[0], "ld [4]") || !strings.Contains(strings.Join(lines, "\n"), "ret #") {
		t.Errorf("disassembly: %v", lines[:3])
	}
}

func TestNotifiedName(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86_64 numbers")
	}
	for _, c := range []struct {
		nr   int32
		arch uint32
		want string
	}{
		{unix.SYS_GETPID, unix.AUDIT_ARCH_X86_64, "getpid"},
		{int32(x32Bit | unix.SYS_GETPID), unix.AUDIT_ARCH_X86_64, "x32:getpid"},
		{int32(x32Bit | 545), unix.AUDIT_ARCH_X86_64, "x32:545"},
		{-1, unix.AUDIT_ARCH_X86_64, "x32:3221225471"},
		{20, auditI386, "i386:20"},
		{1, 0xc00000b7, "arch_0xc00000b7:1"},
	} {
		if got := NotifiedName(c.nr, c.arch); got != c.want {
			t.Errorf("NotifiedName(%d, %#x) = %q, want %q", c.nr, c.arch, got, c.want)
		}
	}
}
