#include "textflag.h"
#include "entryvec.h"

// airlock_entryvec (entryvec.go): DI in, AX out. It reads the vector and
// writes below DI-64 only, and clobbers AX, CX, DX, SI, R8, R9, R10 and
// R11.
TEXT airlock_entryvec(SB),NOSPLIT|NOFRAME,$0-0
	MOVQ	DI, AX // unchanged, unless copied below
	MOVQ	0(DI), R8 // argc
	CMPQ	R8, $maxVectorWords
	JA	done
	LEAQ	16(DI)(R8*8), R10 // envp
env:
	MOVQ	0(R10), SI
	TESTQ	SI, SI
	JEQ	auxv
	LEAQ	·envGOMAXPROCS(SB), DX
	MOVQ	$11, CX // len("GOMAXPROCS="): the caller's own wins
name:
	MOVB	0(SI), R9
	CMPB	R9, 0(DX)
	JNE	nextenv // a NUL ends the string before any read past it
	INCQ	SI
	INCQ	DX
	DECQ	CX
	JNE	name
	RET // set by the caller: left as it is
nextenv:
	ADDQ	$8, R10
	JMP	env
auxv:
	// R10 is the environment's NULL, the auxiliary vector's pairs follow
	// it up to AT_NULL's, included.
	LEAQ	8(R10), R11
pair:
	MOVQ	0(R11), CX
	ADDQ	$16, R11
	TESTQ	CX, CX
	JNE	pair
	MOVQ	R11, CX
	SUBQ	DI, CX // the vector's bytes
	CMPQ	CX, $(maxVectorWords*8)
	JA	done
	LEAQ	-72(DI), AX // below the gap, one word more
	SUBQ	CX, AX
	ANDQ	$~15, AX
	MOVQ	DI, SI
	MOVQ	AX, DX
head:
	// argc, argv and its NULL, the environment
	CMPQ	SI, R10
	JEQ	inject
	MOVQ	0(SI), CX
	MOVQ	CX, 0(DX)
	ADDQ	$8, SI
	ADDQ	$8, DX
	JMP	head
inject:
	LEAQ	·envGOMAXPROCS(SB), CX
	MOVQ	CX, 0(DX)
	ADDQ	$8, DX
tail:
	// the environment's NULL, the auxiliary vector
	CMPQ	SI, R11
	JEQ	done
	MOVQ	0(SI), CX
	MOVQ	CX, 0(DX)
	ADDQ	$8, SI
	ADDQ	$8, DX
	JMP	tail
done:
	RET

// func Vector(sp uintptr) uintptr
TEXT ·Vector(SB),NOSPLIT,$0-16
	MOVQ	sp+0(FP), DI
	CALL	airlock_entryvec(SB)
	MOVQ	AX, ret+8(FP)
	RET
