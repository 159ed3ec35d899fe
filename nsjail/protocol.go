package nsjail

import (
	"github.com/airlock-sandbox/airlock/rootfs"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// The parent and the init talk over two pipes the init inherits:
//
//	parent (supervisor)                          init (re-exec'd binary)
//	-------------------                          -----------------------
//	clone(user,pid,net,mnt,ipc,uts) + uid/gid maps
//	exec /proc/self/exe, env = {initEnv} ----->  Init(): lock OS thread
//	[later: place in cgroup]
//	fd 3: write initConfig JSON [, close] ->  read one JSON value from fd 3
//	                                             (barrier: the parent is alive
//	                                             and done placing it)
//	                                             jail setup steps, in order
//	[prepared sandbox (warm pool) only:]
//	fd 4: read one message              <-----  {"prepared":true}
//	      ... idle until a request ...
//	fd 3: write programConfig JSON, close ---->  read it
//	[both:]
//	                                             limits, fds, caps, no_new_privs
//	fd 4: read until EOF                <-----  {"ready":true} after the last setup step
//	                                     <-----  on failure: {"stage","errno","msg"}, exit
//	                                             load seccomp
//	                                     <-----  {"listener":true} + the listener fd
//	                                             (SCM_RIGHTS; only with kill-by-notify)
//	                                             execve: fd 4 is close-on-exec, so EOF
//	                                             after "ready" means exec'd
//
// fd 4 is a SOCK_SEQPACKET socket: one message a packet, and it can carry
// the seccomp listener fd. EOF without "ready" means the init died during
// setup; "ready" followed by an error means seccomp or execve failed.
const (
	// initEnv marks a process as an airlock init. It is the only
	// variable the init is started with (besides GOMAXPROCS).
	initEnv = "_AIRLOCK_INIT=1"
	// initArg0 is the init's argv[0], visible in host process listings.
	initArg0   = "airlock-init"
	specFD     = 3
	statusFD   = 4
	stagingDir = "/tmp"
)

// initConfig is what the init obeys. It carries no decisions: every value
// was computed by the parent.
type initConfig struct {
	programConfig
	Hostname string      `json:"hostname"`
	NetNS    bool        `json:"netns"`
	Process  bool        `json:"process,omitempty"`
	Plan     rootfs.Plan `json:"plan"`
	Staging  string      `json:"staging"`
	// Deferred: build the jail, report "prepared", then wait on fd 3 for
	// a programConfig (a prepared sandbox of a warm pool).
	Deferred bool `json:"deferred,omitempty"`
}

// programConfig is the part of the spec that is applied just before exec,
// so it can come later than the jail: what runs, and under which limits
// and filter.
type programConfig struct {
	Args    []string        `json:"args"`
	Env     []string        `json:"env"`
	Dir     string          `json:"dir"`
	Rlimits []Rlimit        `json:"rlimits"`
	Seccomp *seccomp.Filter `json:"seccomp,omitempty"`
}

// initStatus is one message from the init on fd 4.
type initStatus struct {
	Ready    bool   `json:"ready,omitempty"`
	Prepared bool   `json:"prepared,omitempty"`
	Listener bool   `json:"listener,omitempty"`
	Stage    string `json:"stage,omitempty"`
	Errno    int    `json:"errno,omitempty"`
	Msg      string `json:"msg,omitempty"`
}
