//go:build !cgo

#include "textflag.h"

// _rt0_airlock: see entry_amd64.s. The syscall clobbers R0 (argc comes
// from the stack, which it leaves as the kernel set it up).
TEXT _rt0_airlock(SB),NOSPLIT|NOFRAME,$0
	MOVD	$1, R0  // fd 1
	MOVD	$1, R1  // F_GETFD
	MOVD	$25, R8 // SYS_fcntl
	SVC
	MOVD	R0, ·stdoutProbe(SB)
	B	_rt0_arm64_linux(SB)
