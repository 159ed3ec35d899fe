#include "textflag.h"
#include "entryvec.h"

// airlock_entryvec (entryvec.go): R0 in and out. It reads the vector and
// writes below R0-64 only, and clobbers R1 to R7 and R9 to R11.
TEXT airlock_entryvec(SB),NOSPLIT|NOFRAME,$0-0
	MOVD	R0, R1 // the kernel's vector
	MOVD	0(R1), R2 // argc
	CMP	$maxVectorWords, R2
	BHI	done
	ADD	$2, R2, R3
	ADD	R3<<3, R1, R4 // envp
env:
	MOVD	0(R4), R5
	CBZ	R5, auxv
	MOVD	$·envGOMAXPROCS(SB), R6
	MOVD	$11, R7 // len("GOMAXPROCS="): the caller's own wins
name:
	MOVBU	(R5), R9
	MOVBU	(R6), R10
	CMP	R10, R9
	BNE	nextenv // a NUL ends the string before any read past it
	ADD	$1, R5
	ADD	$1, R6
	SUBS	$1, R7
	BNE	name
	RET // set by the caller: left as it is
nextenv:
	ADD	$8, R4
	B	env
auxv:
	// R4 is the environment's NULL, the auxiliary vector's pairs follow
	// it up to AT_NULL's, included.
	ADD	$8, R4, R11
pair:
	MOVD	0(R11), R9
	ADD	$16, R11
	CBNZ	R9, pair
	SUB	R1, R11, R9 // the vector's bytes
	CMP	$(maxVectorWords*8), R9
	BHI	done
	SUB	$72, R1, R0 // below a gap as amd64's, one word more
	SUB	R9, R0, R0
	AND	$~15, R0
	MOVD	R1, R5
	MOVD	R0, R6
head:
	// argc, argv and its NULL, the environment
	CMP	R4, R5
	BEQ	inject
	MOVD	(R5), R9
	MOVD	R9, (R6)
	ADD	$8, R5
	ADD	$8, R6
	B	head
inject:
	MOVD	$·envGOMAXPROCS(SB), R9
	MOVD	R9, (R6)
	ADD	$8, R6
tail:
	// the environment's NULL, the auxiliary vector
	CMP	R11, R5
	BEQ	done
	MOVD	(R5), R9
	MOVD	R9, (R6)
	ADD	$8, R5
	ADD	$8, R6
	B	tail
done:
	RET

// func Vector(sp uintptr) uintptr
TEXT ·Vector(SB),NOSPLIT,$16-16
	MOVD	sp+0(FP), R0
	BL	airlock_entryvec(SB)
	MOVD	R0, ret+8(FP)
	RET
