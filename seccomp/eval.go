package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
)

// Eval runs the program p as the kernel would on a native-arch syscall
// number and arguments, and returns its action (SECCOMP_RET_*, with the
// errno in the low bits). It runs in x/net/bpf's VM, which loads words
// big-endian, so each 32-bit word of the seccomp_data is stored
// big-endian at its native offset: the program sees the native values
// (every seccomp load is an aligned 32-bit word).
func Eval(p Program, nr uint32, args ...uint64) (uint32, error) {
	arch, ok := arches[runtime.GOARCH]
	if !ok {
		return 0, fmt.Errorf("seccomp: no arch info for %s", runtime.GOARCH)
	}
	return evalArch(p, arch.audit, nr, args...)
}

func evalArch(p Program, audit, nr uint32, args ...uint64) (uint32, error) {
	vm, err := newVM(p)
	if err != nil {
		return 0, err
	}
	return run(vm, audit, nr, args)
}

func newVM(p Program) (*bpf.VM, error) {
	insns := make([]bpf.Instruction, len(p))
	for i, in := range p {
		insns[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return nil, fmt.Errorf("seccomp: the program does not run in the VM: %w", err)
	}
	return vm, nil
}

func run(vm *bpf.VM, audit, nr uint32, args []uint64) (uint32, error) {
	if len(args) > 6 {
		return 0, fmt.Errorf("seccomp: %d arguments (at most 6)", len(args))
	}
	var data [64]byte
	binary.BigEndian.PutUint32(data[offNr:], nr)
	binary.BigEndian.PutUint32(data[offArch:], audit)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[offArgs+8*i+4:], uint32(a>>32))
	}
	ret, err := vm.Run(data[:])
	if err != nil {
		return 0, fmt.Errorf("seccomp: %w", err)
	}
	return uint32(ret), nil
}
