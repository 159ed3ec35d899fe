//go:build !cgo

#include "textflag.h"

// _rt0_airlock: see entry_amd64.s. It clobbers R0 to R11, R20, R21 and the
// link register (argc comes from the stack: the kernel's, or the copy
// airlock_entryvec made below it).
TEXT _rt0_airlock(SB),NOSPLIT|NOFRAME,$0
	BL	airlock_prefault(SB) // internal/prefault: its image mapped ahead
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
	MOVD	$1, R20 // the signal
	MOVD	$0, R21 // the ignored ones
probe:
	MOVD	R20, R0
	MOVD	$0, R1 // no new action
	MOVD	$·sigBuf(SB), R2
	MOVD	$8, R3 // the size of a set of signals
	MOVD	$134, R8 // SYS_rt_sigaction
	SVC
	CBNZ	R0, next
	MOVD	·sigBuf(SB), R0
	CMP	$1, R0 // SIG_IGN
	BNE	next
	SUB	$1, R20, R3
	MOVD	$1, R4
	LSL	R3, R4, R4
	ORR	R4, R21, R21
next:
	ADD	$1, R20, R20
	CMP	$65, R20
	BLT	probe
	MOVD	R21, ·ignoredProbe(SB)
	MOVD	$0, R0 // SIG_BLOCK: no change, with no new set
	MOVD	$0, R1
	MOVD	$·blockedProbe(SB), R2
	MOVD	$8, R3 // the size of a set of signals
	MOVD	$135, R8 // SYS_rt_sigprocmask
	SVC
	MOVD	$1, R0
	MOVD	R0, ·sigProbed(SB)
	MOVD	RSP, R0
	BL	airlock_entryvec(SB)
	MOVD	RSP, R1
	CMP	R0, R1
	BEQ	runtime
	MOVD	$1, R1
	MOVD	R1, ·maxprocsSet(SB)
	MOVD	R0, RSP
runtime:
	B	_rt0_arm64_linux(SB)
