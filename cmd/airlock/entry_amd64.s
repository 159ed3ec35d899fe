//go:build !cgo

#include "textflag.h"

// _rt0_airlock is the CLI's ELF entry where scripts/build links it with
// -E _rt0_airlock (a build without cgo), before Go's runtime starts:
//   - it maps the binary's image ahead (internal/prefault), which saves
//     the runtime's page faults on it;
//   - it records fcntl(1, F_GETFD) in stdoutProbe (entry_nocgo.go),
//     before checkfds opens /dev/null at a closed fd 1;
//   - it records the caller's timer slack, prctl(PR_GET_TIMERSLACK), in
//     slackProbe, and raises the main thread's to 1 ms
//     (launchabi.InitTimerSlack) before the runtime starts sysmon from
//     it: every thread of the CLI inherits it; its programs get the
//     recorded one (timerslack.go);
//   - it records which signals its caller left ignored, in ignoredProbe
//     (bit n-1 for signal n; sigProbed set), before the runtime installs
//     its handlers on most of them, which its children would see at the
//     default, and which it left blocked, in blockedProbe (signals.go);
//   - it gives the runtime its start vector with GOMAXPROCS=1 appended to
//     the environment, unless its caller set one (internal/entryvec), and
//     records in maxprocsSet that it did.
// Then it jumps to the runtime's own entry with the stack the kernel set
// up, or below it the copy airlock_entryvec made (the syscalls,
// airlock_prefault and airlock_entryvec clobber AX, BX, CX, DX, DI, SI,
// R8 to R13, which the runtime's entry does not read).
TEXT _rt0_airlock(SB),NOSPLIT|NOFRAME,$0
	CALL	airlock_prefault(SB) // internal/prefault: its image mapped ahead
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
	MOVQ	$1, R12  // the signal
	XORQ	R13, R13 // the ignored ones
probe:
	MOVQ	$13, AX // SYS_rt_sigaction
	MOVQ	R12, DI
	XORQ	SI, SI // no new action
	LEAQ	·sigBuf(SB), DX
	MOVQ	$8, R10 // the size of a set of signals
	SYSCALL
	TESTQ	AX, AX
	JNE	next
	CMPQ	·sigBuf(SB), $1 // SIG_IGN
	JNE	next
	MOVQ	R12, CX
	DECQ	CX
	MOVQ	$1, AX
	SHLQ	CX, AX
	ORQ	AX, R13
next:
	INCQ	R12
	CMPQ	R12, $65
	JLT	probe
	MOVQ	R13, ·ignoredProbe(SB)
	MOVQ	$14, AX // SYS_rt_sigprocmask
	XORQ	DI, DI  // SIG_BLOCK: no change, with no new set
	XORQ	SI, SI
	LEAQ	·blockedProbe(SB), DX
	MOVQ	$8, R10 // the size of a set of signals
	SYSCALL
	MOVQ	$1, ·sigProbed(SB)
	MOVQ	SP, DI
	CALL	airlock_entryvec(SB) // writes below SP-64 only, its return address above
	CMPQ	AX, SP
	JEQ	runtime
	MOVQ	$1, ·maxprocsSet(SB)
	MOVQ	AX, SP
runtime:
	JMP	_rt0_amd64_linux(SB)
