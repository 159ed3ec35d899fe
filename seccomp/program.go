package seccomp

import (
	"golang.org/x/net/bpf"

	"github.com/airlock-sandbox/airlock/internal/bpfprog"
)

// The program types and their wire form live in internal/bpfprog, which
// the sandbox init links without the rest of this package.
type (
	// Instruction is one classic BPF instruction, laid out like the
	// kernel's struct sock_filter.
	Instruction = bpfprog.Instruction
	// Program is a seccomp filter: raw classic BPF, ready to load.
	Program = bpfprog.Program
	// Filter is a compiled filter and what it came from, as the jail
	// needs it.
	Filter = bpfprog.Filter
)

// MaxInstructions is the kernel's limit on a filter's length (BPF_MAXINSNS).
const MaxInstructions = bpfprog.MaxInstructions

// ParseRaw decodes Program.AppendRaw's form.
func ParseRaw(raw []byte) (Program, error) { return bpfprog.ParseRaw(raw) }

// Assemble turns x/net/bpf instructions into a Program.
func Assemble(insns []bpf.Instruction) (Program, error) {
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, err
	}
	p := make(Program, len(raw))
	for i, r := range raw {
		p[i] = Instruction{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return p, nil
}
