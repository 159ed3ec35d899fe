//go:build !cgo

#include "textflag.h"

// _rt0_airlock: see entry_amd64.s. The syscalls clobber R0, R1 and R8
// (argc comes from the stack, which it leaves as the kernel set it up).
TEXT _rt0_airlock(SB),NOSPLIT|NOFRAME,$0
	MOVD	$1, R0  // fd 1
	MOVD	$1, R1  // F_GETFD
	MOVD	$25, R8 // SYS_fcntl
	SVC
	MOVD	R0, ·stdoutProbe(SB)
	MOVD	$30, R0  // PR_GET_TIMERSLACK
	MOVD	$0, R1
	MOVD	$167, R8 // SYS_prctl
	SVC
	MOVD	R0, ·slackProbe(SB)
	CMP	$0, R0
	BLE	start // unknown: left as it is
	MOVD	$29, R0      // PR_SET_TIMERSLACK
	MOVD	$1000000, R1 // launchabi.InitTimerSlack
	MOVD	$167, R8     // SYS_prctl
	SVC
start:
	B	_rt0_arm64_linux(SB)
