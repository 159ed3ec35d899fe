//go:build linux

package jailinit

import (
	"errors"
	"fmt"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Filesystem rights a rule on a file (not a directory) may carry.
const llFileRights = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate

// llHandledFS is every filesystem right of abi but device ioctls (which
// the jail's device set and seccomp already bound, and which a terminal
// needs): 13 rights in ABI 1, refer from 2, truncate from 3.
func llHandledFS(abi int) uint64 {
	switch {
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	}
	return 1<<13 - 1
}

// llRights are the Landlock rights of a, within handled, for a directory
// or (dir false) a file.
func llRights(a LandlockAccess, handled uint64, dir bool) uint64 {
	var r uint64
	if a&LandlockRead != 0 {
		r |= llsys.AccessFSReadFile | llsys.AccessFSReadDir
	}
	if a&LandlockList != 0 {
		r |= llsys.AccessFSReadDir
	}
	if a&LandlockExec != 0 {
		r |= llsys.AccessFSExecute
	}
	if a&LandlockWrite != 0 {
		// Device nodes included: making one needs CAP_MKNOD, never held,
		// and that check's EPERM is what a program sees bare.
		r |= llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
			llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo |
			llsys.AccessFSMakeSym | llsys.AccessFSRefer | llsys.AccessFSMakeChar | llsys.AccessFSMakeBlock
	}
	if !dir {
		r &= llFileRights
	}
	return r & handled
}

// applyLandlock restricts the calling thread, and so the program it
// execs, to ll (nothing when ll.ABI is 0). execFD, if not -1, is a file
// the thread may also execute: the reaper's binary, opened O_PATH by the
// supervisor. The rule is on that inode alone, which no path inside the
// sandbox names, and the reaper is not dumpable (no /proc/1/exe).
//
// It calls landlock_restrict_self on this thread only, not on every
// thread as go-landlock's Restrict does (through libpsx below ABI 8):
// execve keeps the calling thread's credentials, Landlock domain
// included, and ends every other thread, so the other Go threads of the
// init never run untrusted code; and libpsx's signal round over the
// runtime's threads would only slow every start.
//
// Preconditions: in the init, on its locked OS thread, after every mount
// and pivot_root (a Landlock-restricted thread cannot mount) and after
// no_new_privs (confine; landlock_restrict_self needs it without
// CAP_SYS_ADMIN), before the seccomp filter (which may deny Landlock's
// syscalls).
func applyLandlock(ll Landlock, execFD int) error {
	fd, err := landlockRuleset(ll, execFD)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// landlockRuleset builds ll's ruleset, as applyLandlock applies it, and
// returns its fd (close-on-exec), or -1 when ll.ABI is 0. The process
// backend's reaper takes it instead (execReaper): its child restricts
// itself just before the program's exec, so the program's domain is
// nested below the reaper's.
func landlockRuleset(ll Landlock, execFD int) (int, error) {
	if ll.ABI == 0 {
		return -1, nil
	}
	attr := llsys.RulesetAttr{HandledAccessFS: llHandledFS(ll.ABI)}
	if ll.Net {
		if ll.ABI < 4 {
			return -1, fmt.Errorf("BUG(airlock): network rules asked of Landlock ABI %d", ll.ABI)
		}
		attr.HandledAccessNet = llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP
	}
	if ll.Scope {
		if ll.ABI < 6 {
			return -1, fmt.Errorf("BUG(airlock): scopes asked of Landlock ABI %d", ll.ABI)
		}
		attr.Scoped = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset (ABI %d): %w", ll.ABI, err)
	}
	for _, p := range ll.Paths {
		if err := llAddPath(fd, p, attr.HandledAccessFS); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if execFD >= 0 {
		// exec opens the file for reading too: both rights are needed.
		attr := llsys.PathBeneathAttr{AllowedAccess: llsys.AccessFSExecute | llsys.AccessFSReadFile, ParentFd: execFD}
		if err := llsys.LandlockAddPathBeneathRule(fd, &attr, 0); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("landlock_add_rule (the reaper): %w", err)
		}
	}
	return fd, nil
}

// llAddPath adds the rule for p to the ruleset fd: the path opened
// O_PATH (following symlinks: the rule is on what the program reaches).
func llAddPath(fd int, p LandlockPath, handled uint64) error {
	pfd, err := unix.Open(p.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if p.Optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("%s: %w", p.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("%s: %w", p.Path, err)
	}
	rights := llRights(p.Access, handled, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	if rights == 0 {
		return nil
	}
	if err := llsys.LandlockAddPathBeneathRule(fd, &llsys.PathBeneathAttr{AllowedAccess: rights, ParentFd: pfd}, 0); err != nil {
		return fmt.Errorf("landlock_add_rule %s: %w", p.Path, err)
	}
	return nil
}
