//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

func TestFindMatchesHost(t *testing.T) {
	p, err := Find("", false)
	switch {
	case os.Getuid() == 0 && err != nil:
		t.Fatalf("root could not find a cgroup parent: %v", err)
	case os.Getuid() == 0 && HostMode() == Unified && p.Backend() != "cgroup2",
		os.Getuid() == 0 && HostMode() != Unified && p.Backend() != "cgroup1":
		t.Fatalf("mode %s, backend %s", HostMode(), p.Backend())
	case os.Getuid() != 0 && HostMode() != Unified:
		var u *policy.UnsupportedError
		if !errors.As(err, &u) || !errors.Is(err, policy.ErrUnsupported) || !strings.Contains(u.Fix, "root") {
			t.Fatalf("rootless on cgroup v1: %v", err)
		}
	}
}

func TestStaleNames(t *testing.T) {
	own, err := groupName()
	if err != nil {
		t.Fatal(err)
	}
	if stale(own) {
		t.Errorf("own group %s called stale", own)
	}
	start, _ := startTime(os.Getpid())
	ns, err := pidNS()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		fmt.Sprintf("airlock-%d-%d-%d-00", os.Getpid(), start+1, ns): true,  // pid reused by another process
		fmt.Sprintf("airlock-999999999-5-%d-00", ns):                 true,  // no such process
		fmt.Sprintf("airlock-999999999-5-%d-00", ns+1):               false, // a pid of another pid namespace
		fmt.Sprintf("airlock-%d-%d-00", os.Getpid(), start+1):        false, // an older naming: not judged
		"airlock-supervisor":     false,
		"airlock-notours-at-all": false,
	} {
		if stale(name) != want {
			t.Errorf("stale(%q) = %v", name, !want)
		}
	}
}

// A supervisor whose /proc entry cannot be read for any reason but its
// absence is alive as far as reaping knows: its groups (and the
// sandboxes in them) are kept. Reaping used to treat every read error as
// "gone", and a supervisor whose read failed (under fault injection in
// the CLI's tests) killed another one's running sandboxes.
func TestStaleFailsClosed(t *testing.T) {
	name := "airlock-4242-17-99-00"
	for errName, c := range map[string]struct {
		err  error
		want bool
	}{
		"ENOENT": {unix.ENOENT, true},
		"ESRCH":  {unix.ESRCH, true},
		"EMFILE": {unix.EMFILE, false},
		"EACCES": {unix.EACCES, false},
		"EIO":    {unix.EIO, false},
		"short":  {errors.New("short /proc/4242/stat"), false},
	} {
		start := func(pid int) (uint64, error) {
			if pid != 4242 {
				t.Fatalf("read pid %d", pid)
			}
			return 0, &os.PathError{Op: "open", Path: "/proc/4242/stat", Err: c.err}
		}
		if got := staleIn(name, 99, start); got != c.want {
			t.Errorf("%s: stale = %v, want %v", errName, got, c.want)
		}
	}
	alive := func(int) (uint64, error) { return 17, nil }
	if staleIn(name, 99, alive) || !staleIn(name, 99, func(int) (uint64, error) { return 18, nil }) {
		t.Error("start time comparison")
	}
}

// requireParent returns the cgroup parent runs would use: a failure as
// root or in a delegated cgroup, where there must be one; a skip
// elsewhere (rootless on cgroup v1).
func requireParent(t *testing.T) *Parent {
	t.Helper()
	p, err := Find("", false)
	if err != nil && (os.Getuid() == 0 || os.Getenv("AIRLOCK_TEST_DELEGATED") == "1") {
		t.Fatalf("no usable cgroup parent as root or in a delegated cgroup: %v", err)
	}
	if err != nil {
		t.Skipf("no usable cgroup parent here: %v", err)
	}
	return p
}

// A real group: limits written, a process added and accounted, killed,
// and removed.
func TestGroupLifecycle(t *testing.T) {
	p := requireParent(t)
	g, err := p.New(Limits{Memory: 32 << 20, Pids: 7, CPUs: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	var memFile, pidsFile string
	switch v := g.(type) {
	case *v1Group:
		memFile, pidsFile = v.file("memory", "memory.limit_in_bytes"), v.file("pids", "pids.max")
	case *v2Group:
		memFile, pidsFile = filepath.Join(v.dir, "memory.max"), filepath.Join(v.dir, "pids.max")
	}
	if m, _ := readInt(memFile); m != 32<<20 {
		t.Errorf("memory limit %d", m)
	}
	if n, _ := readInt(pidsFile); n != 7 {
		t.Errorf("pids.max %d", n)
	}
	// The child works only once it is in the group: v1 does not move
	// memory charged before a process joins.
	cmd := exec.Command("sh", "-c", `read _; exec sh -c "i=0; while [ \$i -lt 100000 ]; do i=\$((i+1)); done; exec sleep 30"`)
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("\n"))
	var st Stats
	// Up to 10 s: the loaded emulated guest can take seconds to run it.
	for i := 0; i < 1000 && (st.CPU == 0 || st.MemoryPeak == 0); i++ {
		time.Sleep(10 * time.Millisecond)
		if st, err = g.Stats(); err != nil {
			t.Fatal(err)
		}
	}
	if st.MemoryPeak <= 0 || st.OOMKills != 0 {
		t.Errorf("stats %+v", st)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("process not killed: %v", err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if exists(memFile) {
		t.Error("group still exists after Delete")
	}
}

// A group a dead supervisor left is reaped from every hierarchy, also
// where only some controllers' parts of it remain (v1: each controller's
// parent is listed, not the memory one alone).
func TestReapStaleEveryHierarchy(t *testing.T) {
	p := requireParent(t)
	ns, err := pidNS()
	if err != nil {
		t.Fatal(err)
	}
	// No process has pid 999999999: the supervisor is provably gone.
	name := fmt.Sprintf("airlock-999999999-5-%d-%d", ns, os.Getpid())
	var made []string
	if p.Backend() == "cgroup2" {
		made = []string{filepath.Join(p.v2, name)}
	} else {
		// Only the pids part: the memory parent, listed alone, misses it.
		made = []string{filepath.Join(p.v1["pids"], name), filepath.Join(p.v1["freezer"], name)}
	}
	for _, d := range made {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
	}
	n, err := p.ReapStale()
	if err != nil || n < 1 {
		t.Fatalf("ReapStale: %d reaped, %v", n, err)
	}
	for _, d := range made {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", d, err)
		}
	}
}

// A limit's write is retried when a signal interrupts it: cgroup v1's
// memory.limit_in_bytes answers EINTR whenever a signal is pending for
// the writing thread as it starts (mem_cgroup_resize_max), and a Go
// process gets signals of its own (the runtime's preemption, SIGURG). A
// run once failed its setup with that EINTR (run44, executor). Here the
// writing thread is sent SIGURG in a loop while it writes.
func TestWriteRetriesEINTR(t *testing.T) {
	p := requireParent(t)
	g, err := p.New(Limits{Memory: 32 << 20, Pids: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	var memFile string
	switch v := g.(type) {
	case *v1Group:
		memFile = v.file("memory", "memory.limit_in_bytes")
	case *v2Group:
		memFile = filepath.Join(v.dir, "memory.max")
	}
	tids, stop, done := make(chan int), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tid := <-tids
		for {
			select {
			case <-stop:
				return
			default:
				unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
			}
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tids <- unix.Gettid()
	for i := 0; i < 20000; i++ {
		if err := writeFile(memFile, fmt.Sprint((32-i%2)<<20)); err != nil {
			close(stop)
			<-done
			t.Fatalf("write %d: %v", i, err)
		}
	}
	close(stop)
	<-done
}
