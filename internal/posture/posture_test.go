package posture

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/nsjail"
	"golang.org/x/sys/unix"
)

// fakeChildEnv makes the test binary a sweep child that calls nothing:
// "die=N" exits in call N, "hang=N" blocks in it; every other call N
// answers ok, EPERM or ENOSYS by N mod 3. It tests the parent's recovery
// without making a single real syscall on the host.
const fakeChildEnv = "POSTURE_TEST_FAKE_CHILD"

func TestMain(m *testing.M) {
	nsjail.Init()
	if spec, ok := os.LookupEnv(fakeChildEnv); ok {
		fakeChild(spec)
	}
	os.Exit(m.Run())
}

func fakeChild(spec string) {
	action := map[int]string{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.Atoi(v)
		action[n] = k
	}
	err := serve(os.Stdin, os.Stdout, func(nr int) unix.Errno {
		switch action[nr] {
		case "die":
			os.Exit(3)
		case "hang":
			time.Sleep(time.Hour)
		}
		return fakeErrno(nr)
	})
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func fakeErrno(nr int) unix.Errno {
	return []unix.Errno{0, unix.EPERM, unix.ENOSYS}[nr%3]
}

func byName(s Sweep) map[string]SyscallResult {
	m := map[string]SyscallResult{}
	for _, r := range s.Results {
		m[r.Name] = r
	}
	return m
}

// A call that kills the probing child is reported as failed, and the
// sweep goes on in a new child: every other number still gets its answer.
func TestSweepSurvivesDyingChild(t *testing.T) {
	t.Setenv(fakeChildEnv, "die=5,die=9")
	s := runSweep(Options{SweepCommand: []string{os.Args[0]}, Skip: map[string]string{"read": "test skip"}})
	all := Syscalls()
	if len(s.Results) != len(all) {
		t.Fatalf("%d results for %d numbers", len(s.Results), len(all))
	}
	c := s.Counts
	if c.Swept+c.Skipped+c.Failed != len(all) || c.EPERM+c.ENOSYS+c.Reachable != c.Swept {
		t.Errorf("counts do not add up: %+v for %d numbers", c, len(all))
	}
	if c.Failed != 2 || len(s.Failed) != 2 {
		t.Fatalf("failed: %+v", s.Failed)
	}
	for _, f := range s.Failed {
		if f.Name != "fstat" && f.Name != "mmap" || !strings.Contains(f.Reason, "exit status 3") {
			t.Errorf("failed entry %+v, want fstat (5) and mmap (9) ending the child", f)
		}
	}
	m := byName(s)
	if r := m["read"]; r.Class != "skipped" {
		t.Errorf("read: %+v, want skipped by Options.Skip", r)
	}
	for name := range neverCall {
		if r, ok := m[name]; ok && r.Class != "skipped" {
			t.Errorf("%s: %+v, must never be called", name, r)
		}
	}
	for _, sc := range all {
		r := m[sc.Name]
		if r.Class == "skipped" || r.Class == "failed" {
			continue
		}
		want := map[unix.Errno]string{0: "reachable", unix.EPERM: "eperm", unix.ENOSYS: "enosys"}[fakeErrno(sc.Nr)]
		if r.Class != want {
			t.Errorf("%s (%d): class %s, want %s", sc.Name, sc.Nr, r.Class, want)
		}
	}
	if !slices.Contains(s.ENOSYS, "syscall_1000") && fakeErrno(1000) == unix.ENOSYS {
		t.Errorf("syscall_1000 not listed as ENOSYS: %v", s.ENOSYS)
	}
}

// A call that never returns costs its own entry, not the report.
func TestSweepSurvivesStalledChild(t *testing.T) {
	old := stallTimeout
	stallTimeout = 5 * time.Second
	defer func() { stallTimeout = old }()
	t.Setenv(fakeChildEnv, "hang=7")
	s := runSweep(Options{SweepCommand: []string{os.Args[0]}})
	if len(s.Failed) != 1 || s.Failed[0].Name != "poll" || !strings.Contains(s.Failed[0].Reason, "did not return") {
		t.Fatalf("failed: %+v, want poll (7) stalled", s.Failed)
	}
	if r := byName(s)["lseek"]; r.Class != "enosys" { // 8, after the stall
		t.Errorf("lseek after the stalled call: %+v", r)
	}
}

func TestSweepWithoutCommand(t *testing.T) {
	if s := runSweep(Options{}); s.Note == "" || s.Counts.Swept != 0 {
		t.Errorf("no command: %+v", s)
	}
}

func TestSyscallsTable(t *testing.T) {
	all := Syscalls()
	m := map[string]int{}
	for _, s := range all {
		m[s.Name] = s.Nr
	}
	// x86_64 numbers from arch/x86/entry/syscalls/syscall_64.tbl.
	for name, nr := range map[string]int{"read": 0, "ptrace": 101, "mount": 165, "clone3": 435, "io_uring_setup": 425, "syscall_1000": 1000} {
		if got, ok := m[name]; !ok || got != nr {
			t.Errorf("%s: %d (listed %v), want %d", name, got, ok, nr)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	data := `22 1 0:21 / / ro,nosuid,nodev,relatime - tmpfs tmpfs rw,size=1024k
23 22 8:1 /usr /usr ro,nosuid,nodev,relatime shared:1 master:2 - ext4 /dev/sda1 rw
24 22 0:22 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw,size=65536k,mode=1777
25 22 8:1 /data /my\040dir rw,noexec,relatime - ext4 /dev/sda1 ro,errors=remount-ro
`
	ms, err := ParseMountinfo(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Target: "/", FSType: "tmpfs", Source: "tmpfs", Options: "ro,nosuid,nodev,relatime", ReadOnly: true, NoSuid: true, NoDev: true},
		{Target: "/usr", FSType: "ext4", Source: "/dev/sda1", Options: "ro,nosuid,nodev,relatime", ReadOnly: true, NoSuid: true, NoDev: true},
		{Target: "/tmp", FSType: "tmpfs", Source: "tmpfs", Options: "rw,nosuid,nodev,relatime", NoSuid: true, NoDev: true},
		// A read-only superblock makes the mount read-only too.
		{Target: "/my dir", FSType: "ext4", Source: "/dev/sda1", Options: "rw,noexec,relatime", ReadOnly: true, NoExec: true},
	}
	if !slices.Equal(ms, want) {
		t.Errorf("got  %+v\nwant %+v", ms, want)
	}
	for _, bad := range []string{"22 1 0:21 / / rw - tmpfs\n", "1 2 3\n", "22 1 0:21 / / rw tmpfs tmpfs rw\n"} {
		if _, err := ParseMountinfo(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got := unescapeOctal(`a\134b\011c\`); got != "a\\b\tc\\" {
		t.Errorf("unescape: %q", got)
	}
}

func TestDecodeCaps(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want []string
	}{
		{"0000000000000000", []string{}},
		{"0000000000200000", []string{"cap_sys_admin"}},
		{"00000000a80425fb", []string{"cap_chown", "cap_dac_override", "cap_fowner", "cap_fsetid", "cap_kill", "cap_setgid",
			"cap_setuid", "cap_setpcap", "cap_net_bind_service", "cap_net_raw", "cap_sys_chroot", "cap_mknod", "cap_audit_write", "cap_setfcap"}},
		{"000001ffffffffff", nil}, // all 41 known
		{"0000020000000001", []string{"cap_chown", "cap_41"}},
	} {
		got, err := DecodeCaps(c.hex)
		if err != nil {
			t.Fatalf("%s: %v", c.hex, err)
		}
		if c.want == nil {
			if len(got) != len(capNames) || got[40] != "cap_checkpoint_restore" {
				t.Errorf("%s: %v", c.hex, got)
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.hex, got, c.want)
		}
	}
	if _, err := DecodeCaps("zz"); err == nil {
		t.Error("bad mask: no error")
	}
}

func TestCapsFromStatus(t *testing.T) {
	status := "Name:\tsh\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000400\nCapEff:\t0000000000000400\n" +
		"CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	st := parseStatus(status)
	c, err := capsFromStatus(st)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Effective.Names, []string{"cap_net_bind_service"}) || c.Permitted.Hex != "0000000000000400" ||
		len(c.Inheritable.Names) != 0 || len(c.Bounding.Names) != 41 || st["Seccomp_filters"] != "1" || st["NoNewPrivs"] != "1" {
		t.Errorf("caps %+v, status %v", c, st)
	}
	if _, err := capsFromStatus(parseStatus("CapInh:\t0\n")); err == nil {
		t.Error("missing sets: no error")
	}
}

func TestSmallParsers(t *testing.T) {
	netdev := "Inter-|   Receive                            |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes\n" +
		"    lo:     0       0    0    0    0     0          0         0        0\n" +
		"  eth0: 1 2 3 4 5 6 7 8 9\n"
	if got := ParseNetDev(netdev); !slices.Equal(got, []string{"lo", "eth0"}) {
		t.Errorf("net/dev: %v", got)
	}
	if got := idMapLines("         0      65534          1\n"); !slices.Equal(got, []string{"0 65534 1"}) {
		t.Errorf("uid_map: %q", got)
	}
	if got := securebitNames(0x2f); !slices.Equal(got, []string{"noroot", "noroot_locked", "no_setuid_fixup", "no_setuid_fixup_locked", "keep_caps_locked"}) {
		t.Errorf("securebits: %v", got)
	}
}

func TestCompareNamespaces(t *testing.T) {
	r := &Report{Namespaces: []Namespace{{Name: "pid", Inode: 1}, {Name: "time", Inode: 7}, {Name: "user", Inode: 3}}}
	r.CompareNamespaces(map[string]uint64{"pid": 2, "time": 7})
	want := map[string]string{"pid": "true", "time": "false", "user": "unknown"}
	for _, n := range r.Namespaces {
		got := "unknown"
		if n.New != nil {
			got = strconv.FormatBool(*n.New)
		}
		if got != want[n.Name] {
			t.Errorf("%s: new=%s, want %s", n.Name, got, want[n.Name])
		}
	}
}
