#include "textflag.h"

// POPULATE(start, end, advice): madvise(start's page, up to end,
// advice), its result in AX; clobbers CX, DX, SI, DI, R11.
#define POPULATE(start, end, advice) \
	MOVQ	$28, AX; \
	MOVQ	$start(SB), DI; \
	ANDQ	$~4095, DI; \
	MOVQ	$end(SB), SI; \
	SUBQ	DI, SI; \
	MOVQ	$advice, DX; \
	SYSCALL

// airlock_prefault (prefault.go). The read-only range starts at the
// text's page (the first segment's start in Go's amd64 layout) and ends
// at the pclntab's end; the writable one runs from noptrdata's page (the
// data segment's start) to the end of the bss. (28 is SYS_madvise; 22
// and 23 are MADV_POPULATE_READ and MADV_POPULATE_WRITE.)
TEXT airlock_prefault(SB),NOSPLIT|NOFRAME,$0-0
	POPULATE(runtime·text, runtime·epclntab, 22)
	MOVQ	AX, BX
	POPULATE(runtime·noptrdata, runtime·ebss, 23)
	XCHGQ	AX, BX
	RET

// func Populate() (readOnly, writable int64)
TEXT ·Populate(SB),NOSPLIT,$0-16
	CALL	airlock_prefault(SB)
	MOVQ	AX, readOnly+0(FP)
	MOVQ	BX, writable+8(FP)
	RET

// func populateWrite(addr, n uintptr) int64
TEXT ·populateWrite(SB),NOSPLIT,$0-24
	MOVQ	$28, AX // SYS_madvise
	MOVQ	addr+0(FP), DI
	MOVQ	n+8(FP), SI
	MOVQ	$23, DX // MADV_POPULATE_WRITE
	SYSCALL
	MOVQ	AX, ret+16(FP)
	RET
