// Package launchabi is how a sandbox's init is started: the spawn
// helper's command line (cmd/airlock-spawn), the init's environment and
// the fds it inherits. It is the one definition for the init
// (internal/jailinit), its supervisor (nsjail) and the CLI's launch at
// its process start (cmd/airlock/internal/early), which runs while Go
// initializes the CLI's packages, before nsjail's: so it imports nothing
// but strconv, syscall and unsafe, and has no initializer of its own.
package launchabi

const (
	// InitEnv marks a process as an airlock init. It is the only
	// variable the init is started with (besides InitEnviron's others).
	InitEnv = "_AIRLOCK_INIT=1"
	// BuildEnv carries the parent's build token to the init, which
	// checks it against its own before anything else.
	BuildEnv = "_AIRLOCK_BUILD"
	// InitArg0 is the init's argv[0], visible in host process listings.
	InitArg0 = "airlock-init"
	// SpecFD and StatusFD are the init's spec pipe (read end) and status
	// socket; JoinCgroupFD is the first of the v1 tasks files it
	// inherits, if any, and after them comes the reaper's fd.
	SpecFD       = 3
	StatusFD     = 4
	JoinCgroupFD = 5
)

// InitEnviron is the init's whole environment: the marker, one P, no
// asynchronous preemption, and the build token when there is one. The
// supervisor's environment (its secrets) never reaches the init or the
// program. asyncpreemptoff: the init's runtime must make no syscall of
// its own between the filter's load and the exec, and a preemption is
// one, tgkill(getpid(), ...) to the running thread, which a policy's
// kill rule on getpid (or tgkill) would answer by killing the sandbox
// before its program ran (seen once in the emulated guest, where the
// init's steps take long enough for sysmon to preempt them).
func InitEnviron(token string) []string {
	env := []string{InitEnv, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1"}
	if token != "" {
		env = append(env, BuildEnv+"="+token)
	}
	return env
}

// Nobody is the host id a sandbox started by root maps to by default.
const Nobody = 65534

// InitTimerSlack is the timer slack, in ns, the spawn helper gives the
// init before its exec (cmd/airlock-spawn's INIT_TIMERSLACK), and the
// airlock CLI gives itself at its entry: a Go runtime's monitor thread
// (sysmon) sleeps 20 µs a cycle while any of its Ps runs or sits in a
// system call, so that with the kernel's default slack of 50 µs it wakes
// every 70 µs or so through a process's whole setup; with 1 ms, a
// fifteenth as often. Neither the init nor the CLI has a timer that 1 ms
// later matters to (the CLI's timeout fires at most that much late). The
// program gets its own caller's slack back (nsjail.Spec.TimerSlack).
const InitTimerSlack = 1000000

// HostIDs are the host uid and gid a sandbox's ids map to, for a caller
// running as callerUID and callerGID that asked for hostUID and hostGID
// (nsjail.Spec's HostUID, HostGID): a caller that is not root maps its
// own ids (the only ones its user namespace may map); root maps the ids
// asked for, nobody for 0 (host root is never mapped).
func HostIDs(callerUID, callerGID, hostUID, hostGID int) (int, int) {
	if callerUID != 0 {
		return callerUID, callerGID
	}
	if hostUID == 0 {
		hostUID = Nobody
	}
	if hostGID == 0 {
		hostGID = Nobody
	}
	return hostUID, hostGID
}
