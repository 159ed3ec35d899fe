package launchabi

import (
	"strconv"
	"syscall"
)

// CloneFlags are the init's new namespaces: user, pid, mount, ipc, uts
// and, unless it shares the host's network, network. (The cgroup
// namespace comes later: the init unshares it once in its cgroup.)
func CloneFlags(hostNetwork bool) uintptr {
	f := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if !hostNetwork {
		f |= syscall.CLONE_NEWNET
	}
	return f
}

// SpawnArgs is the spawn helper's argv: the init's namespaces, the host
// ids its uid and gid map to, its ids inside, the cgroup v2 directory fd
// it is born in (-1: none), the helper's report socket fd, and the init
// binary to exec with its argv[0]. spawn.c reads them in this order.
func SpawnArgs(spawnPath, initPath string, hostNetwork bool, hostUID, hostGID, uid, gid, cgroupFD, reportFD int) []string {
	return []string{spawnPath, strconv.FormatUint(uint64(CloneFlags(hostNetwork)), 10),
		strconv.Itoa(hostUID), strconv.Itoa(hostGID), strconv.Itoa(uid), strconv.Itoa(gid),
		strconv.Itoa(cgroupFD), strconv.Itoa(reportFD), initPath, InitArg0}
}
