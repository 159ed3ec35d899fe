package nsjail_test

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// An init whose spawn helper the caller started itself (nsjail.Started,
// as the CLI starts one while its packages are initialized) runs the
// program as a launched one does, as the child of that init; a spec that
// does not fit it is refused, and the helper and its init are killed and
// reaped, as they are by Abandon; executor.Adopt then launches anew. (On
// a cgroup v2 host executor.Adopt refuses every one: nothing is launched
// ahead there.)
func TestAdopted(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	spawn := filepath.Join(bin, "airlock-spawn")
	testutil.RequireFeature(t, "the spawn helper built beside airlock (scripts/build, gcc)", testutil.Exists(spawn))
	init := filepath.Join(bin, "airlock-init-plain")
	cfg := executor.Config{InitPath: init, SpawnPath: spawn}
	ex, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	v2 := cgroups.HostMode() == cgroups.Unified
	pol := policy.Default()
	pol.Timeout = policy.Duration(time.Minute)
	uid, gid := pol.InsideIDs()
	hostUID, hostGID := os.Getuid(), os.Getgid()
	if hostUID == 0 {
		hostUID, hostGID = 65534, 65534
	}
	// start starts a helper as nsjail.Started says, with these stdio
	// files, as cmd/airlock/internal/early does. The calling goroutine
	// stays on its thread, to which the helper's parent-death signal is
	// bound (the CLI's is Go's main thread, which never exits).
	start := func(t *testing.T, stdin, stdout, stderr *os.File) nsjail.Started {
		t.Helper()
		runtime.LockOSThread()
		t.Cleanup(runtime.UnlockOSThread)
		var spec, status, report [2]int
		if err := syscall.Pipe2(spec[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*[2]int{&status, &report} {
			var err error
			if *p, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0); err != nil {
				t.Fatal(err)
			}
		}
		reaper, err := syscall.Open(spawn, 0x200000|syscall.O_CLOEXEC, 0) // O_PATH
		if err != nil {
			t.Fatal(err)
		}
		files := []uintptr{stdin.Fd(), stdout.Fd(), stderr.Fd(), uintptr(spec[0]), uintptr(status[1]), uintptr(reaper), uintptr(report[1])}
		pid, err := syscall.ForkExec(spawn, launchabi.SpawnArgs(spawn, init, false, hostUID, hostGID, uid, gid, -1, len(files)-1), &syscall.ProcAttr{
			Env: launchabi.InitEnviron(nsjail.BuildToken()), Files: files, Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}})
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range []int{spec[0], status[1], report[1], reaper} {
			syscall.Close(fd)
		}
		return nsjail.Started{Pid: pid, SpecW: os.NewFile(uintptr(spec[1]), "spec"), StatusR: os.NewFile(uintptr(status[0]), "status"),
			Report: os.NewFile(uintptr(report[0]), "report"), Stdin: stdin, Stdout: stdout, Stderr: stderr,
			SpawnPath: spawn, InitPath: init, UID: uid, GID: gid, HostUID: hostUID, HostGID: hostGID, At: time.Now()}
	}
	pipe := func(t *testing.T) (*os.File, *os.File) {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	// initOf waits for the init the helper cloned, its child, and
	// returns its pid.
	initOf := func(t *testing.T, helper int) int {
		t.Helper()
		var pid int
		if !testutil.WaitFor(10*time.Second, func() bool { pid = childWith(helper, launchabi.InitArg0); return pid > 0 }) {
			t.Fatalf("the helper %d started no init", helper)
		}
		return pid
	}

	t.Run("runs in the adopted init", func(t *testing.T) {
		inR, inW := pipe(t)
		outR, outW := pipe(t)
		st := start(t, inR, outW, outW)
		req := executor.Request{Args: []string{"/bin/sh", "-c", "read x; echo got $x"}, Policy: pol, Stdin: inR, Stdout: outW, Stderr: outW}
		l := executor.Adopt(cfg, req, st)
		if v2 {
			// Nothing is launched ahead there (a cold init is born in its
			// cgroup): the adoption is refused, the helper killed.
			if l != nil {
				l.Close()
				t.Error("executor.Adopt adopted on a cgroup v2 host")
			}
			waitGone(t, "helper", st.Pid)
			return
		}
		if l == nil {
			t.Fatal("executor.Adopt returned nothing for the request it was started for")
		}
		pid := l.Pid()
		if init := initOf(t, st.Pid); pid != init {
			t.Fatalf("the launch's init is %d, the started helper's %d: not adopted", pid, init)
		}
		req.Launched = l
		res := executeInside(t, ex, req, pid, inW)
		outW.Close()
		got, _ := io.ReadAll(outR)
		if res.Status != nsjail.StatusOK || string(got) != "got it\n" {
			t.Fatalf("output %q, result %+v", got, res)
		}
		waitGone(t, "init", pid)
		waitGone(t, "helper", st.Pid)
	})

	t.Run("a spec that does not fit is refused", func(t *testing.T) {
		_, outW := pipe(t)
		for name, bad := range map[string]func(*nsjail.Spec){
			"host network": func(s *nsjail.Spec) { s.HostNetwork = true },
			"other ids":    func(s *nsjail.Spec) { s.UID = 0 },
			"other stdout": func(s *nsjail.Spec) { s.Stdout = os.Stdout },
			"captured":     func(s *nsjail.Spec) { s.Stderr = nil },
			"capped":       func(s *nsjail.Spec) { s.LimitStreams = true },
		} {
			st := start(t, os.Stdin, outW, outW)
			init := initOf(t, st.Pid)
			s, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/true"}, Policy: pol, Stdin: os.Stdin, Stdout: outW, Stderr: outW})
			if err != nil {
				t.Fatal(err)
			}
			bad(&s)
			if l, err := nsjail.Adopt(s, st); err == nil {
				l.Close()
				t.Errorf("%s: adopted", name)
			}
			waitGone(t, "helper", st.Pid)
			waitGone(t, "init", init)
		}
	})

	t.Run("executor.Adopt launches anew", func(t *testing.T) {
		// Started for uid 1000, asked for 0: the helper is killed, and
		// the launch returned is a new one, which runs the program as 0.
		_, outW := pipe(t)
		st := start(t, os.Stdin, outW, outW)
		init := initOf(t, st.Pid)
		p := pol
		zero := 0
		p.UID = &zero
		req := executor.Request{Args: []string{"/bin/sh", "-c", "exit $(id -u)"}, Policy: p, Stdin: os.Stdin, Stdout: outW, Stderr: outW}
		l := executor.Adopt(cfg, req, st)
		waitGone(t, "helper", st.Pid)
		waitGone(t, "init", init)
		if v2 {
			if l != nil {
				l.Close()
				t.Error("executor.Adopt launched ahead on a cgroup v2 host")
			}
			return
		}
		if l == nil {
			t.Fatal("no launch")
		}
		req.Launched = l
		res, err := ex.Execute(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != nsjail.StatusOK || res.ExitCode != 0 {
			t.Fatalf("want uid 0 inside, got %+v", res)
		}
	})

	t.Run("abandon", func(t *testing.T) {
		_, outW := pipe(t)
		st := start(t, os.Stdin, outW, outW)
		init := initOf(t, st.Pid)
		nsjail.Abandon(st)
		waitGone(t, "helper", st.Pid)
		waitGone(t, "init", init)
	})
}

// childWith returns the pid of a child of parent whose command line
// starts with arg0, or 0.
func childWith(parent int, arg0 string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.HasPrefix(string(cmd), arg0+"\x00") {
			return pid
		}
	}
	return 0
}
