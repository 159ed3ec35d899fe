package jailinit

// Landlock is a Landlock ruleset, decided by the parent, that the init
// applies to itself as the step before the seccomp filter: the program
// it execs can then open only the paths listed (with the access given),
// and with Net bind or connect no TCP port, and with Scope reach no
// abstract unix socket and signal no process outside the sandbox. Files
// already open are not affected (Landlock checks opens).
//
// It is the process backend's filesystem and network isolation, and a
// second layer in the jail, where the paths are the ones inside the new
// root (against a mistake in the mount plan or a kernel bug in it).
type Landlock struct {
	// ABI is the Landlock ABI the ruleset is written for (see
	// policy.Host.LandlockABI): the init handles every filesystem right
	// this ABI knows but device ioctls, so whatever the rules do not
	// grant is denied. 0 = no Landlock.
	ABI int `json:"abi"`
	// Paths are the hierarchies the program may use.
	Paths []LandlockPath `json:"paths,omitempty"`
	// Net denies TCP bind and connect (ABI 4).
	Net bool `json:"net,omitempty"`
	// Scope denies connecting to abstract unix sockets and signalling
	// processes outside the sandbox's Landlock domain (ABI 6).
	Scope bool `json:"scope,omitempty"`
}

// LandlockAccess is what a rule allows beneath its path.
type LandlockAccess uint8

const (
	// LandlockRead: read files, list directories.
	LandlockRead LandlockAccess = 1 << iota
	// LandlockWrite: write and truncate files, create, rename, link and
	// remove entries.
	LandlockWrite
	// LandlockExec: execute files.
	LandlockExec
	// LandlockList: list directories only.
	LandlockList
)

// LandlockPath is one rule: Access beneath Path (a directory) or on it
// (a file).
type LandlockPath struct {
	Path   string         `json:"path"`
	Access LandlockAccess `json:"access"`
	// Optional skips a path that does not exist; otherwise it is an error.
	Optional bool `json:"optional,omitempty"`
}
