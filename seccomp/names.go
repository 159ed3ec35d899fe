package seccomp

import (
	"runtime"
	"strconv"
)

// SyscallName returns the native name of syscall nr, or its number.
func SyscallName(nr int32) string {
	for name, n := range sysnums[runtime.GOARCH] {
		if int32(n) == nr {
			return name
		}
	}
	return "syscall_" + strconv.Itoa(int(nr))
}

// RetUserNotif is SECCOMP_RET_USER_NOTIF, for ActionAvailable.
const RetUserNotif = retUserNotif
