#include "textflag.h"

// POPULATE(start, end, advice): madvise(start's 64 KiB boundary, up to
// end, advice), its result in R0; clobbers R1, R2, R8.
#define POPULATE(start, end, advice) \
	MOVD	$start(SB), R0; \
	AND	$~0xffff, R0; \
	MOVD	$end(SB), R1; \
	SUB	R0, R1, R1; \
	MOVD	$advice, R2; \
	MOVD	$233, R8; \
	SVC

// airlock_prefault (prefault.go). Go's arm64 segments are 64 KiB
// aligned, so rounding down to 64 KiB gives each segment's start, which
// is page-aligned whatever the kernel's page size. (233 is SYS_madvise;
// 22 and 23 are MADV_POPULATE_READ and MADV_POPULATE_WRITE.)
TEXT airlock_prefault(SB),NOSPLIT|NOFRAME,$0-0
	POPULATE(runtime·text, runtime·epclntab, 22)
	MOVD	R0, R9
	POPULATE(runtime·noptrdata, runtime·ebss, 23)
	MOVD	R0, R1
	MOVD	R9, R0
	RET

// func Populate() (readOnly, writable int64)
TEXT ·Populate(SB),NOSPLIT,$16-16
	BL	airlock_prefault(SB)
	MOVD	R0, readOnly+0(FP)
	MOVD	R1, writable+8(FP)
	RET

// func populateWrite(addr, n uintptr) int64
TEXT ·populateWrite(SB),NOSPLIT,$0-24
	MOVD	addr+0(FP), R0
	MOVD	n+8(FP), R1
	MOVD	$23, R2  // MADV_POPULATE_WRITE
	MOVD	$233, R8 // SYS_madvise
	SVC
	MOVD	R0, ret+16(FP)
	RET
