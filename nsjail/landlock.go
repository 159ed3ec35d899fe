package nsjail

import (
	"path"
	"strings"

	"github.com/airlock-sandbox/airlock/rootfs"
)

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
