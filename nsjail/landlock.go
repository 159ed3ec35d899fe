package nsjail

import (
	"path"
	"strings"

	"github.com/airlock-sandbox/airlock/rootfs"
)

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

// Landlock rights of the plans' paths.
const (
	llRX  = LandlockRead | LandlockExec
	llRW  = LandlockRead | LandlockWrite
	llRWX = LandlockRead | LandlockWrite | LandlockExec
)

// LandlockPaths is the ruleset's paths for a sandbox with plan: what the
// plan makes reachable, and nothing else. Read-only binds are read and
// execute, writable binds and the workspace read, write and execute, the
// device nodes read and write, /proc read (and, in the jail, where it is
// the sandbox's own, write).
//
// onHost gives the paths of the process backend, which has no root of its
// own: each bind's source on the host, no tmpfs (its /tmp is the
// workspace), the host's /proc read-only, and of the generated /etc files
// only the resolver's (hosts, nsswitch.conf, resolv.conf: never the
// host's passwd or group). Otherwise the paths are the plan's targets, as
// seen inside the new root.
func LandlockPaths(plan rootfs.Plan, onHost bool) []LandlockPath {
	var out []LandlockPath
	add := func(p string, a LandlockAccess, optional bool) {
		out = append(out, LandlockPath{Path: p, Access: a, Optional: optional})
	}
	etc := false
	for _, op := range plan.Ops {
		where := op.Target
		if onHost {
			where = op.Source
		}
		switch {
		case !onHost && (op.Kind == rootfs.KindFile || op.Kind == rootfs.KindBind && op.ReadOnly) && strings.HasPrefix(op.Target, "/etc/"):
			// The jail's /etc holds only what the plan put there: one
			// rule for all of it (fewer rules, a faster start).
			if !etc {
				add("/etc", LandlockRead, false)
			}
			etc = true
		case op.Kind == rootfs.KindBind && op.CharDevice:
			add(where, llRW, op.Optional)
		case op.Kind == rootfs.KindBind && op.ReadOnly:
			add(where, llRX, op.Optional)
		case op.Kind == rootfs.KindBind:
			add(where, llRWX, op.Optional)
		case op.Kind == rootfs.KindProc && onHost:
			add("/proc", LandlockRead, false)
		case op.Kind == rootfs.KindProc:
			add(op.Target, llRW, false)
		case op.Kind == rootfs.KindFile && onHost:
			if resolverFiles[path.Base(op.Target)] {
				add(op.Target, LandlockRead, true)
			}
		case op.Kind == rootfs.KindFile:
			add(op.Target, LandlockRead, false)
		case op.Kind == rootfs.KindTmpfs && !onHost && op.Target == "/dev":
			add(op.Target, LandlockRead, false)
		case op.Kind == rootfs.KindTmpfs && !onHost && !op.ReadOnly:
			add(op.Target, llRWX, false)
		}
	}
	if onHost {
		// OpenSSL's configuration: a missing one is skipped, an
		// unreadable one is fatal (node's startup).
		add("/etc/ssl/openssl.cnf", LandlockRead, true)
	}
	if !onHost {
		// The names in the jail's root, for a program that lists it (its
		// files are only what the plan put there).
		add("/", LandlockList, false)
		// A terminal, where the plan makes one (a private devpts).
		add("/dev/pts", llRW, true)
		add("/dev/ptmx", llRW, true)
	}
	return out
}

// resolverFiles are the generated /etc files the process backend may read
// from the host: what name resolution reads.
var resolverFiles = map[string]bool{"hosts": true, "nsswitch.conf": true, "resolv.conf": true}
