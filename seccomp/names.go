package seccomp

import (
	"fmt"
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

// auditI386 is AUDIT_ARCH_I386, the ABI of int 0x80 on x86_64.
const auditI386 = 0x40000003

// NotifiedName names a syscall a notification reported: its native name,
// or, for a foreign ABI the filter refuses, the ABI and the number
// ("x32:getpid", "i386:20", "arch_0x...:N").
func NotifiedName(nr int32, arch uint32) string {
	native := arches[runtime.GOARCH]
	switch {
	case arch == native.audit && native.x32 && uint32(nr)&x32Bit != 0:
		n := uint32(nr) &^ x32Bit
		if n < 512 { // x32 shares x86_64's numbers below 512
			return "x32:" + SyscallName(int32(n))
		}
		return "x32:" + strconv.FormatUint(uint64(n), 10)
	case arch == native.audit:
		return SyscallName(nr)
	case arch == auditI386:
		return "i386:" + strconv.Itoa(int(nr))
	}
	return fmt.Sprintf("arch_%#x:%d", arch, nr)
}
