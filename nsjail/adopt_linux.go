package nsjail

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// Started is a spawn helper that the caller started itself, before it
// could make a Spec: the CLI's launch at its process start
// (cmd/airlock/internal/early), which runs while Go initializes the
// CLI's packages, a millisecond before this package could. It was
// started as Launch starts one, and Adopt takes it over:
//
//   - the argv launchabi.SpawnArgs gives for the ids, network and
//     binaries below, with no cgroup fd and the report socket at fd 6;
//   - the environment launchabi.InitEnviron gives for BuildToken();
//   - at fds 0, 1 and 2 Stdin, Stdout and Stderr; at 3
//     (launchabi.SpecFD) the spec pipe's read end; at 4 (StatusFD) the
//     status socket's other end; at 5 (JoinCgroupFD: no tasks files come
//     before it) the spawn helper's binary opened O_PATH, the reaper; at
//     6 the report socket's other end; nothing else;
//   - a session of its own, and SIGKILL as its parent-death signal, set
//     from a thread that lives as long as the caller's process (Go's main
//     thread, during package initialization, never exits early).
type Started struct {
	// Pid is the helper's, a child of this process.
	Pid int
	// SpecW, StatusR and Report are this process's ends of the spec
	// pipe, the status socket and the report socket.
	SpecW, StatusR, Report *os.File
	// What the helper was started with: its stdio, the binaries, the
	// network (shared with the host or not), the ids inside and the host
	// ids they map to.
	Stdin, Stdout, Stderr *os.File
	SpawnPath, InitPath   string
	HostNetwork           bool
	UID, GID              int
	HostUID, HostGID      int
	// At is when the helper was started: the run's phases count from it.
	At time.Time
}

// Adopt is Launch for an init whose helper the caller started itself (st):
// spec is what the caller will run, and must fit what st was started
// with, or Adopt refuses it. An adopted init writes to its files
// itself, uncapped: spec's Stdin, Stdout and Stderr must be st's, and
// LimitStreams false. Either way st is Adopt's: when it refuses, it
// kills and reaps the helper (and with it the init) and closes st's
// channels (not its stdio); the caller starts cold or launches anew.
func Adopt(spec Spec, st Started) (*Launched, error) {
	launch, err := launchPart(spec)
	if err == nil {
		err = adoptable(&launch, &st)
	}
	if err != nil {
		abandon(st)
		return nil, err
	}
	s := newSandbox(&launch)
	s.cmd, s.pidfd, s.reaper = &exec.Cmd{Path: st.SpawnPath}, -1, true
	s.lastCap = lastCap()
	s.start, s.runStart = st.At, st.At
	s.startNS = monotonicNS() - int64(time.Since(st.At))
	l := &Launched{s: s, launch: launch, ready: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Through a pidfd (os.FindProcess opens one), so that Wait and
		// Kill never reach a recycled pid. Here, not on the caller's
		// path: Go's first use of pidfds checks them, with a vfork of a
		// child that exits at once. Nothing reads s.cmd before l.ready.
		s.cmd.Process, _ = os.FindProcess(st.Pid)
		s.supervise(started, st.Report, nil, false)
	}()
	go func() {
		defer close(l.ready)
		err := <-started
		st.Report.Close() // read (supervise is done with it) or failed
		if err != nil {
			st.SpecW.Close()
			st.StatusR.Close()
			l.err = startError(err)
			return
		}
		l.c = &initChannels{specW: st.SpecW, statusR: st.StatusR}
		s.log.Debug("sandbox started", slog.Int("pid", s.pid))
		s.phase("adopted") // the init was started by the caller (Started)
		s.phase("launched")
	}()
	return l, nil
}

// adoptable checks that the launch part of spec is what st was started
// with.
func adoptable(launch *Spec, st *Started) error {
	uid, gid := hostIDs(launch)
	if launch.SpawnPath != st.SpawnPath || launch.InitPath != st.InitPath || launch.HostNetwork != st.HostNetwork ||
		launch.UID != st.UID || launch.GID != st.GID || uid != st.HostUID || gid != st.HostGID || launch.NoReaper {
		return policy.Invalid("adopt", "the spec differs from what the init was started with")
	}
	if launch.LimitStreams || !sameFile(launch.Stdin, st.Stdin) || !sameFile(launch.Stdout, st.Stdout) || !sameFile(launch.Stderr, st.Stderr) {
		return policy.Invalid("adopt", "an init started by its caller writes to the stdio it was started with, uncapped")
	}
	if st.Pid <= 0 || st.SpecW == nil || st.StatusR == nil || st.Report == nil {
		return policy.Invalid("adopt", "no helper, or a channel missing")
	}
	return nil
}

// sameFile reports whether the stream v is the file f (and not nil:
// no stream at all is captured, or /dev/null, which f is not).
func sameFile(v any, f *os.File) bool {
	g, ok := v.(*os.File)
	return ok && g != nil && g == f
}

// abandon kills and reaps st's helper and its init, and closes st's
// channels. The init first, through the pidfd in the helper's report (it
// comes once the init was exec'd, or the helper failed): its parent, the
// helper, reaps it and exits, as when Close kills a launched init. An
// init killed through its helper's death would be reaped by whatever
// adopts orphans here, whenever that gets to it.
func abandon(st Started) {
	killed := false
	if st.Report != nil {
		if _, pidfd, err := readSpawnReport(st.Report, st.InitPath); err == nil {
			killed = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0) == nil
			closeFD(pidfd)
		}
	}
	for _, f := range []*os.File{st.SpecW, st.StatusR, st.Report} {
		if f != nil {
			f.Close()
		}
	}
	if st.Pid <= 0 {
		return
	}
	// The pid is still our unreaped child, so it is the helper's. With
	// its init killed it reaps it and exits by itself; otherwise it goes
	// (and its init with it, by the parent-death signal).
	if !killed {
		unix.Kill(st.Pid, syscall.SIGKILL)
	}
	for {
		if _, err := unix.Wait4(st.Pid, nil, 0, nil); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// Abandon kills and reaps st's helper, whose init dies with it, and
// closes st's files: for a caller that will not Adopt it.
func Abandon(st Started) { abandon(st) }
