package jailinit

import (
	"github.com/airlock-sandbox/airlock/internal/bpfprog"
	"github.com/airlock-sandbox/airlock/internal/launchabi"
	"github.com/airlock-sandbox/airlock/rootfs"
)

// The parent and the init talk over two channels the init inherits. The
// sequence is the same for every mode; a warm pool's prepared sandbox
// differs only in when the program is sent (with its request):
//
//	parent (supervisor)                          init (re-exec'd binary)
//	-------------------                          -----------------------
//	clone(user,pid,net,mnt,ipc,uts) + uid/gid maps
//	  (cgroup v2: born in the run's cgroup;
//	   cgroup v1: fds 5.. = its tasks files, or,
//	   launched ahead of its cgroup (nsjail.Launch),
//	   none: they are sent on fd 4 before the spec;
//	   with a spawn helper, the helper does the
//	   clone, maps and exec: spawn_linux.go)
//	exec /proc/self/exe (or InitPath),   ----->  Init(): lock OS thread;
//	  env = {initEnv, buildEnv}                  refuse another build's token
//	[v2 where clone3 is refused: place
//	 it by pid now, before the spec]
//	[v1, launched ahead: fd 4: send the
//	 tasks files (SCM_RIGHTS, one byte)] ----->  (received after the spec)
//	fd 3: write initConfig (wire.go)    ----->  read it
//	[cold: write programConfig and                [v1: "0" to each tasks file:
//	 close fd 3 at once: the init does             this thread moves itself]
//	 not wait for us below]                      build the jail (mounts,
//	                                              pivot_root, hostname, lo up)
//	fd 4: read, keep the listener       <-----  [net allow: {egress} + the
//	      (served from the program's start)       listener on 127.0.0.1:PORT
//	                                              inside (SCM_RIGHTS)]
//	                                             confine: cgroupns, fds,
//	                                              capabilities, no_new_privs,
//	                                              Landlock
//	fd 4: read until "prepared"         <-----  {prepared, marks}
//	      [a prepared sandbox of a warm pool waits here for a request;
//	       one whose reaper waits (ReaperWaits) got its filter with the
//	       spec: it loads it, reports {ready, listener} and execs the
//	       reaper, which reports {prepared} again once set up (Prepare
//	       reads both) and waits on fd 3 for the request's programConfig]
//	[warm: write programConfig, close]  ----->  read it
//	                                             rlimits, chdir, lookup
//	                                             seccomp (if it carries one)
//	fd 4: read until EOF                <-----  {ready, marks, listener} + the
//	                                             listener fd (SCM_RIGHTS; only
//	                                             with kill-by-notify)
//	                                             execve: fd 4 is close-on-exec, so EOF
//	                                             after "ready" means exec'd
//	  [with a reaper (initConfig.Reaper):        [execve the reaper instead, fd 4
//	   until {started}]                            kept (reaper_linux.go); it
//	                                   <-----      forks and execs the program:
//	                                               {started}, or {stage exec, errno}]
//	on any failure:                     <-----  {stage, errno, msg}, exit
//	Wait: what is left                  <-----  [the reaper: {ended, the
//	                                              program's wait status}, exit]
//
// fd 4 is a SOCK_SEQPACKET socket: one message a packet, and it can carry
// the seccomp listener fd. EOF without "ready" means the init died during
// setup; "ready" followed by an error means the program's execve failed.
// With a reaper the result is the program's own wait status ("ended"):
// pid 1 cannot die by most signals, so its status could not say that the
// program was killed by SIGTERM. Without that report (the sandbox was
// killed: a timeout, an OOM kill) the init's own status stands.
const (
	// initEnv marks a process as an airlock init, buildEnv carries the
	// parent's build token (see buildToken), which the init checks
	// against its own before anything else; initArg0 is its argv[0],
	// visible in host process listings (internal/launchabi: the one
	// definition, shared with the parent's side).
	initEnv  = launchabi.InitEnv
	buildEnv = launchabi.BuildEnv
	initArg0 = launchabi.InitArg0
	specFD   = launchabi.SpecFD
	statusFD = launchabi.StatusFD
	// joinCgroupFD is the first of initConfig.JoinCgroup tasks files.
	joinCgroupFD = launchabi.JoinCgroupFD
	stagingDir   = "/tmp"
)

// initConfig is the jail the init builds. It carries no decisions: every
// value was computed by the parent.
type initConfig struct {
	Hostname string
	NetNS    bool
	Process  bool
	Plan     rootfs.Plan
	Staging  string
	// JoinCgroup is the number of cgroup v1 tasks files inherited from
	// fd joinCgroupFD on, one per hierarchy of the run's cgroup. The
	// init's exec thread writes "0" to each before anything else.
	JoinCgroup int
	// SentCgroup is the number of cgroup v1 tasks files the parent sends
	// on the status socket (SCM_RIGHTS) instead, before the spec: an init
	// started ahead of its run's cgroup (nsjail.Launch). The init
	// receives them right after the spec and joins as with JoinCgroup;
	// the two are never both set.
	SentCgroup int
	// Landlock is the ruleset the init applies before the filter.
	Landlock Landlock
	// EgressPort, if not 0, is where the init listens on the sandbox's
	// loopback for the egress proxy (net allow); it sends the listener
	// to the parent (initStatus.Egress) and keeps no copy.
	EgressPort int
	// Reaper: the fd after the tasks files is the reaper (the spawn
	// helper's binary, opened O_PATH), exec'd as pid 1 with the program
	// its child (reaper_linux.go).
	Reaper bool
	// LastCap is the kernel's highest capability (lastCap): the init
	// drops its bounding set from 0 to LastCap, and checks that the
	// kernel knows no capability past it.
	LastCap int
	// ReaperWaits (with Reaper; a warm pool's prepared sandbox): the
	// programConfig that follows the spec carries only the filter, sent
	// with the spec. The init loads it right after its "prepared" report,
	// reports "ready" and execs the reaper, which waits for the request's
	// program on the spec pipe (programConfig without filter or terminal)
	// and does its rlimits, chdir and lookup itself (reaper_linux.go).
	ReaperWaits bool
	// Recycle (with ReaperWaits): the reaper serves one run after
	// another (nsjail.Spec.Recycle), emptying these directories (the
	// writable tmpfs mounts) between runs.
	Recycle []string
	// Live (with ReaperWaits, never with Recycle): the reaper is pid 1 of
	// a sandbox that lives (nsjail.Live): it starts process after process,
	// each a request on the status socket (spawn.c's live mode).
	Live bool
	// TimerSlack is the timer slack (ns) the exec thread sets before the
	// filter, in place of the one the spawn helper started the init with
	// (InitTimerSlack): the program's and its reaper's, as they would have
	// inherited it from the supervisor's caller (nsjail.Spec.TimerSlack).
	// 0 = left as it is.
	TimerSlack uint64
	// SetSignals: the init sets SignalsIgnored (bit n-1 for signal n) to
	// SIG_IGN and every other signal to SIG_DFL just before its exec
	// (nsjail.Spec.SetSignals), and SignalsBlocked as its exec thread's
	// signal mask, which the reaper passes on to the program.
	SetSignals     bool
	SignalsIgnored uint64
	SignalsBlocked uint64
}

// programConfig is the part of the spec applied just before exec: what
// runs, and under which limits and filter (the only filter: loaded as
// the init's last step before exec).
type programConfig struct {
	Args    []string
	Env     []string
	Dir     string
	Rlimits []Rlimit
	Seccomp *bpfprog.Filter
	// TTY: stdio is a terminal of the program's own (Spec.TTY), which
	// the reaper makes its controlling terminal.
	TTY bool
}

// initStatus is one message from the init on fd 4 (encoded by wire.go).
type initStatus struct {
	Ready   bool
	Started bool // the program runs, the reaper is being exec'd
	Ended   bool // the reaper's program ended with WaitStatus
	// WaitStatus is the program's wait(2) status, with Ended.
	WaitStatus uint32
	Prepared   bool
	Listener   bool // with Ready: the message carries the seccomp listener fd
	Stage      string
	Errno      int
	Msg        string
	// Marks are CLOCK_MONOTONIC readings (ns) of the init's steps since
	// its last report, named by initMarks: where a start's time goes,
	// logged by the parent at debug level (see Sandbox.phase).
	Marks []int64
	// Egress: the message carries the egress listener fd (SCM_RIGHTS),
	// sent once, before "prepared".
	Egress bool
}

// initMarks names the init's timing marks, in the order it takes them
// (runInit): the prepared report carries the first five, the ready
// report the rest.
var initMarks = []string{"init-started", "init-spec-read", "init-in-cgroup", "init-jail-built", "init-confined",
	"init-program-read", "init-filter-loaded"}
