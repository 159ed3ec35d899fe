//go:build linux

package early

import (
	"os"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/internal/launchabi"
)

// token is the build token scripts/build links into the CLI and its
// init (as internal/jailinit.buildToken, which this package cannot
// import without being initialized later): none, no launch.
var token string

// The default policy's ids inside (policy.Policy.InsideIDs), Linux's
// cgroup2 filesystem magic, and O_PATH: a test checks them against
// their packages.
const (
	insideUID, insideGID = 1000, 1000
	cgroup2Magic         = 0x63677270
	oPath                = 0x200000 // O_PATH, which package syscall does not name
)

// launchNeutral are the run flags that do not change what is launched
// (the binaries, namespaces, ids and streams), each with whether it
// takes a value; execNeutral adds exec's own.
var (
	launchNeutral = map[string]bool{
		"timeout": true, "cpu-time": true, "memory": true, "pids": true, "cpus": true,
		"ro-bind": true, "bind": true, "tmpfs": true, "workspace": true, "chdir": true,
		"setenv": true, "env-pass": true, "kill-grace": true, "best-effort": false,
	}
	execNeutral = with(launchNeutral, map[string]bool{"lang": true, "c": true})
)

func with(a, b map[string]bool) map[string]bool {
	m := make(map[string]bool, len(a)+len(b))
	for _, x := range []map[string]bool{a, b} {
		for k, v := range x {
			m[k] = v
		}
	}
	return m
}

// runsAhead reports whether args (os.Args) are `airlock run` with only
// launch-neutral flags and a program, or `airlock exec` with only
// launch-neutral flags and its code given with -c (a FILE or "-" may be
// code that only airlock-daemon can read, and "-" gives the program no
// stdin): flags as Go's flag package reads them, with one or two
// dashes and a value after "=" or as the next argument.
func runsAhead(args []string) bool {
	if len(args) < 3 {
		return false
	}
	var neutral map[string]bool
	switch args[1] {
	case "run":
		neutral = launchNeutral
	case "exec":
		neutral = execNeutral
	default:
		return false
	}
	exec, code := args[1] == "exec", false
	for i := 2; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			// The flags end: the program follows (run), or the code's
			// arguments (exec with -c).
			if exec {
				return code
			}
			return a != "--" || i+1 < len(args)
		}
		name := a[1:]
		if name[0] == '-' {
			name = name[1:]
		}
		value := false
		for j := 0; j < len(name); j++ {
			if name[j] == '=' {
				name, value = name[:j], true
				break
			}
		}
		takes, ok := neutral[name]
		if !ok {
			return false
		}
		code = code || name == "c"
		if takes && !value {
			i++ // its value is the next argument
		}
	}
	return exec && code // run: no program
}

// start launches the init for args, or returns nil.
func start(args []string) *Launch {
	// (An init's argv is launchabi.InitArg0 alone: this binary
	// re-executed as one never runs ahead.)
	if token == "" || !runsAhead(args) {
		return nil
	}
	var fs syscall.Statfs_t
	if syscall.Statfs("/sys/fs/cgroup", &fs) != nil || fs.Type == cgroup2Magic {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	dir := exe
	for len(dir) > 0 && dir[len(dir)-1] != '/' {
		dir = dir[:len(dir)-1]
	}
	spawn, init := dir+"airlock-spawn", dir+"airlock-init"
	if dir == "" || syscall.Access(spawn, 1) != nil || syscall.Access(init, 1) != nil { // X_OK
		return nil
	}
	l := &Launch{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, SpawnPath: spawn, InitPath: init, UID: insideUID, GID: insideGID, Token: token, At: time.Now()}
	l.HostUID, l.HostGID = launchabi.HostIDs(os.Getuid(), os.Getgid(), 0, 0) // the CLI asks for none
	if l.spawn() != nil {
		return nil
	}
	return l
}

// spawn starts the helper as nsjail.Started describes it.
func (l *Launch) spawn() (err error) {
	var open []int
	closeAll := func() {
		for _, fd := range open {
			syscall.Close(fd)
		}
		open = nil
	}
	defer closeAll()
	var spec, status, report [2]int
	if err = syscall.Pipe2(spec[:], syscall.O_CLOEXEC); err != nil {
		return err
	}
	open = append(open, spec[:]...)
	for _, p := range []*[2]int{&status, &report} {
		if *p, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		open = append(open, p[:]...)
	}
	reaper, err := syscall.Open(l.SpawnPath, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	open = append(open, reaper)
	// The init's fds (launchabi): its spec, its status, the reaper; the
	// helper's report socket after them. Fds 0, 1 and 2 are this
	// process's own: Go's runtime has opened /dev/null at any that was
	// closed before package initialization.
	files := []uintptr{0, 1, 2, uintptr(spec[0]), uintptr(status[1]), uintptr(reaper), uintptr(report[1])}
	argv := launchabi.SpawnArgs(l.SpawnPath, l.InitPath, false, l.HostUID, l.HostGID, l.UID, l.GID, -1, len(files)-1)
	l.Pid, err = syscall.ForkExec(l.SpawnPath, argv, &syscall.ProcAttr{
		Env:   launchabi.InitEnviron(l.Token),
		Files: files,
		// A session of its own (the init makes another), and death with
		// this thread, Go's main thread (see the package comment).
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return err
	}
	// Ours are the other ends; the helper and the init hold theirs.
	syscall.Close(spec[0])
	syscall.Close(status[1])
	syscall.Close(report[1])
	syscall.Close(reaper)
	open = nil
	// Ours are read through the runtime's poller, as nsjail's socketPair
	// makes them: non-blocking (the helper's and the init's stay blocking:
	// each end of a socket pair has its own flags). A failure leaves one
	// blocking, which reads as well, only holding a thread.
	syscall.SetNonblock(status[0], true)
	syscall.SetNonblock(report[0], true)
	l.SpecW = os.NewFile(uintptr(spec[1]), "spec")
	l.StatusR = os.NewFile(uintptr(status[0]), "status")
	l.Report = os.NewFile(uintptr(report[0]), "spawn-report")
	return nil
}
