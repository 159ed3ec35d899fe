package nsjail

import "github.com/airlock-sandbox/airlock/internal/jailinit"

// The init's side of the sandbox (what runs in the new namespaces before
// the program) is package internal/jailinit, which links only what the
// init needs (no HTTP, YAML, libseccomp or cgroup library), so that the
// init binary (cmd/airlock-init) starts without their initialization on
// every sandbox's critical path. These names are its, kept here.
type (
	// Landlock is a Landlock ruleset, decided by the parent, that the
	// init applies to itself as the step before the seccomp filter (see
	// jailinit.Landlock).
	Landlock = jailinit.Landlock
	// LandlockAccess is what a rule allows beneath its path.
	LandlockAccess = jailinit.LandlockAccess
	// LandlockPath is one rule: Access beneath Path (a directory) or on
	// it (a file).
	LandlockPath = jailinit.LandlockPath
	// Rlimit is one resource limit.
	Rlimit = jailinit.Rlimit

	initConfig    = jailinit.Config
	programConfig = jailinit.Program
	initStatus    = jailinit.Status
)

// Landlock access rights (jailinit).
const (
	LandlockRead  = jailinit.LandlockRead
	LandlockWrite = jailinit.LandlockWrite
	LandlockExec  = jailinit.LandlockExec
	LandlockList  = jailinit.LandlockList
)

const (
	initEnv      = jailinit.Env
	buildEnv     = jailinit.BuildEnv
	initArg0     = jailinit.Arg0
	stagingDir   = jailinit.StagingDir
	joinCgroupFD = jailinit.JoinCgroupFD
)

var initMarks = jailinit.MarkNames

// IsInit reports whether this process was started as an airlock init.
func IsInit() bool { return jailinit.IsInit() }

// Init is the re-exec hook. Call it first thing in main (and in TestMain)
// of every binary that starts sandboxes:
//
//	func main() {
//		nsjail.Init()
//		...
//	}
//
// In an ordinary process it returns at once. In an airlock init it builds
// the sandbox from the spec its parent sends and execs the program (or
// its reaper, the program its child); it never returns, and it is the
// only place airlock exits a process. A binary that is only an init
// (cmd/airlock-init) calls jailinit.Init itself and links none of this
// package.
func Init() { jailinit.Init() }

// BuildToken returns the token this binary was built with ("" if none;
// scripts/build sets it, see internal/jailinit's buildToken).
func BuildToken() string { return jailinit.BuildToken() }

func monotonicNS() int64 { return jailinit.MonotonicNS() }
