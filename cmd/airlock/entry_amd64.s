//go:build !cgo

#include "textflag.h"

// _rt0_airlock is the CLI's ELF entry where scripts/build links it with
// -E _rt0_airlock (a build without cgo), before Go's runtime starts:
//   - it records fcntl(1, F_GETFD) in stdoutProbe (stdout_nocgo.go),
//     before checkfds opens /dev/null at a closed fd 1;
//   - it records the caller's timer slack, prctl(PR_GET_TIMERSLACK), in
//     slackProbe, and raises the main thread's to 1 ms
//     (launchabi.InitTimerSlack) before the runtime starts sysmon from
//     it: every thread of the CLI inherits it; its programs get the
//     recorded one (timerslack.go).
// Then it jumps to the runtime's own entry with the stack the kernel set
// up (the syscalls clobber AX, CX, DI, SI, R11, which it does not read).
TEXT _rt0_airlock(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$72, AX // SYS_fcntl
	MOVQ	$1, DI  // fd 1
	MOVQ	$1, SI  // F_GETFD
	SYSCALL
	MOVQ	AX, ·stdoutProbe(SB)
	MOVQ	$157, AX // SYS_prctl
	MOVQ	$30, DI  // PR_GET_TIMERSLACK
	MOVQ	$0, SI
	SYSCALL
	MOVQ	AX, ·slackProbe(SB)
	CMPQ	AX, $0
	JLE	start // unknown: left as it is
	MOVQ	$157, AX     // SYS_prctl
	MOVQ	$29, DI      // PR_SET_TIMERSLACK
	MOVQ	$1000000, SI // launchabi.InitTimerSlack
	SYSCALL
start:
	JMP	_rt0_amd64_linux(SB)
