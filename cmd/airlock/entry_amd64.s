//go:build !cgo

#include "textflag.h"

// _rt0_airlock is the CLI's ELF entry where scripts/build links it with
// -E _rt0_airlock (a build without cgo): before Go's runtime starts, and
// with it checkfds, which opens /dev/null at a closed fd 1, it records
// fcntl(1, F_GETFD) in stdoutProbe (stdout_nocgo.go). Then it jumps to
// the runtime's own entry with the stack and the registers the kernel set
// up (the syscall clobbers AX, CX, R11, which the entry does not read).
TEXT _rt0_airlock(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$72, AX // SYS_fcntl
	MOVQ	$1, DI  // fd 1
	MOVQ	$1, SI  // F_GETFD
	SYSCALL
	MOVQ	AX, ·stdoutProbe(SB)
	JMP	_rt0_amd64_linux(SB)
