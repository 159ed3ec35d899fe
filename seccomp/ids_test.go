//go:build linux

package seccomp

import (
	"runtime"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// With IDs, a change to an unmapped id answers EPERM and a change to the
// mapped ids (or -1) passes; without, every id passes to the kernel. A
// profile that kills or conditions a call keeps its own answer. Judged
// by running the compiled program over crafted calls.
func TestIDsAnswerEPERM(t *testing.T) {
	table := sysnums[runtime.GOARCH]
	audit := arches[runtime.GOARCH].audit
	const u, g, minus1 = 1000, 1001, 0xffffffff
	eperm := uint32(retErrno | 1)
	ids := compileDefault(t, Options{IDs: &IDs{UID: u, GID: g}})
	plain := compileDefault(t, Options{})
	nr := func(name string) (uint32, bool) { n, ok := table[name]; return n, ok }
	for _, tc := range []struct {
		name    string
		call    string
		args    []uint64
		withIDs uint32
	}{
		{"setuid mapped", "setuid", []uint64{u}, retAllow},
		{"setuid unmapped", "setuid", []uint64{0}, eperm},
		{"setuid gid's number", "setuid", []uint64{g}, eperm},
		{"setuid -1 (EINVAL bare too)", "setuid", []uint64{minus1}, retAllow},
		{"setuid high bits ignored, as the kernel does", "setuid", []uint64{1<<32 | u}, retAllow},
		{"setgid mapped", "setgid", []uint64{g}, retAllow},
		{"setgid unmapped", "setgid", []uint64{u}, eperm},
		{"setreuid keep, mapped", "setreuid", []uint64{minus1, u}, retAllow},
		{"setreuid unmapped second", "setreuid", []uint64{u, 0}, eperm},
		{"setregid unmapped first", "setregid", []uint64{65534, g}, eperm},
		{"setresuid all mapped or kept", "setresuid", []uint64{u, minus1, u}, retAllow},
		{"setresuid unmapped third", "setresuid", []uint64{u, u, 5}, eperm},
		{"setresgid unmapped second", "setresgid", []uint64{g, 0, g}, eperm},
		{"chown own", "chown", []uint64{0, u, g}, retAllow},
		{"chown to root", "chown", []uint64{0, 0, minus1}, eperm},
		{"chown group unmapped", "chown", []uint64{0, minus1, 0}, eperm},
		{"lchown kept", "lchown", []uint64{0, minus1, minus1}, retAllow},
		{"fchown unmapped", "fchown", []uint64{3, 65534, g}, eperm},
		{"fchownat own", "fchownat", []uint64{0xffffff9c, 0, u, g, 0}, retAllow},
		{"fchownat unmapped gid", "fchownat", []uint64{0xffffff9c, 0, u, 7, 0}, eperm},
		// Its id arguments are 2 and 3: the uid's number in the path's
		// place is not an id.
		{"fchownat, path argument ignored", "fchownat", []uint64{0xffffff9c, 0, minus1, minus1, 0}, retAllow},
		{"setfsuid left alone", "setfsuid", []uint64{0}, retAllow},
		{"read", "read", []uint64{0, 0, 0}, retAllow},
		{"getuid", "getuid", nil, retAllow},
	} {
		n, ok := nr(tc.call)
		if !ok {
			continue // not on this architecture (chown, lchown on arm64)
		}
		if got := eval(t, ids, audit, n, tc.args...); got != tc.withIDs {
			t.Errorf("%s with IDs: %#x, want %#x", tc.name, got, tc.withIDs)
		}
		if got := eval(t, plain, audit, n, tc.args...); got != retAllow {
			t.Errorf("%s without IDs: %#x, want ALLOW", tc.name, got)
		}
	}
	// A profile's own kill of setuid stays a kill.
	kill := compileDefault(t, Options{IDs: &IDs{UID: u, GID: g}}, policy.SyscallRule{Names: []string{"setuid"}, Action: policy.ActKill})
	n, _ := nr("setuid")
	if got := eval(t, kill, audit, n, 0); got != retKillProcess {
		t.Errorf("setuid killed by the profile, unmapped id: %#x, want KILL_PROCESS", got)
	}
}
