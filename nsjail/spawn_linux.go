package nsjail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"golang.org/x/sys/unix"
)

// The spawn helper (cmd/airlock-spawn, Spec.SpawnPath) creates the init's
// namespaces so that the supervisor never forks itself: Go starts the
// helper with a vfork, and the helper, a few pages of static C, does the
// namespace fork, writes the uid/gid maps, and reports on a socket once
// the init was exec'd: its pid and a pidfd (SCM_RIGHTS), or the step that
// failed. It stays the init's parent, waits for it and ends as it ended
// (exit code or signal); the init dies with it (PR_SET_PDEATHSIG) and it
// with the supervisor's thread. See spawn.c for the ordering.

// spawnSteps names the helper's steps, by the number it reports.
var spawnSteps = []string{"ok", "arguments", "clone", "uid_map", "setgroups", "gid_map", "sync", "credentials", "exec", "affinity"}

// spawnReportSize is the report's fixed size: step, errno, pid (int32s).
const spawnReportSize = 12

// spawnCommand builds the helper's command for the init's: the same
// channels and stdio, the namespaces and maps as arguments. report is the
// helper's end of the report socket; cgroupFD (or -1) the v2 cgroup
// directory the init is born in. Both are passed after every other fd.
func (s *Sandbox) spawnCommand(init *exec.Cmd, report *os.File, cgroup *os.File) *exec.Cmd {
	uid, gid := hostIDs(s.spec)
	files := append(init.ExtraFiles, report)
	cgfd := -1
	if cgroup != nil {
		files = append(files, cgroup)
		cgfd = 3 + len(files) - 1
	}
	cmd := exec.Command(s.spec.SpawnPath)
	cmd.Args = launchabi.SpawnArgs(s.spec.SpawnPath, init.Path, s.spec.HostNetwork, uid, gid, s.spec.UID, s.spec.GID, cgfd, 3+len(init.ExtraFiles))
	// The init's path as Go resolved it, and any error of that (a name
	// not found on PATH, or found only relative to the working directory):
	// Start then fails with it, as it would for the init itself.
	cmd.Err = init.Err
	cmd.Env, cmd.ExtraFiles = init.Env, files
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = init.Stdin, init.Stdout, init.Stderr, init.WaitDelay
	// A session of its own (the init makes another), and death with the
	// supervising thread (supervise); no namespaces: so Go can vfork.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// spawnFailure is a failed step of the helper: the errno wrapped as Go's
// own start would (startError classifies it; an exec failure names the
// init's path).
func spawnFailure(step int, errno syscall.Errno, initPath string) error {
	name := "step " + strconv.Itoa(step)
	if step >= 0 && step < len(spawnSteps) {
		name = spawnSteps[step]
	}
	if name == "exec" {
		return &os.PathError{Op: "exec", Path: initPath, Err: errno}
	}
	return os.NewSyscallError("spawn: "+name, errno)
}

// readSpawnReport reads the helper's one report: the init's pid and a
// pidfd, or the failure. EOF without a report means the helper died
// before it could tell (the caller reaps it and says how).
func readSpawnReport(report *os.File, initPath string) (pid, pidfd int, err error) {
	buf := make([]byte, spawnReportSize+1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	rc, err := report.SyscallConn()
	if err != nil {
		return 0, -1, err
	}
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	}); err != nil {
		return 0, -1, err
	}
	if rerr != nil {
		return 0, -1, rerr
	}
	pidfd = -1
	if oobn > 0 {
		if pidfd, err = listenerFD(oob[:oobn]); err != nil {
			return 0, -1, err
		}
	}
	if n == 0 {
		closeFD(pidfd)
		return 0, -1, errSpawnDied
	}
	if n != spawnReportSize {
		closeFD(pidfd)
		return 0, -1, fmt.Errorf("spawn helper: a report of %d bytes", n)
	}
	step := int(int32(binary.NativeEndian.Uint32(buf[0:])))
	errno := syscall.Errno(binary.NativeEndian.Uint32(buf[4:]))
	pid = int(int32(binary.NativeEndian.Uint32(buf[8:])))
	if step != 0 {
		closeFD(pidfd)
		return 0, -1, spawnFailure(step, errno, initPath)
	}
	if pid <= 0 || pidfd < 0 {
		closeFD(pidfd)
		return 0, -1, fmt.Errorf("spawn helper: a success report without pid (%d) or pidfd", pid)
	}
	return pid, pidfd, nil
}

// errSpawnDied: the helper ended without a report.
var errSpawnDied = errors.New("the spawn helper ended without a report")

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
