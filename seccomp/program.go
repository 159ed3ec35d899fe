package seccomp

import "golang.org/x/net/bpf"

// Instruction is one classic BPF instruction, laid out like the kernel's
// struct sock_filter.
type Instruction struct {
	Code uint16 `json:"code"`
	Jt   uint8  `json:"jt"`
	Jf   uint8  `json:"jf"`
	K    uint32 `json:"k"`
}

// Program is a seccomp filter: raw classic BPF, ready to load.
type Program []Instruction

// MaxInstructions is the kernel's limit on a filter's length (BPF_MAXINSNS).
const MaxInstructions = 4096

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

// Filter is a compiled filter and what it came from, as the jail needs it.
type Filter struct {
	// Profile names the profile ("default", a file path).
	Profile string `json:"profile"`
	// Rules is the profile's number of (syscall, rule) pairs.
	Rules int `json:"rules"`
	// Program is the BPF to load.
	Program Program `json:"program"`
	// Notify says kill actions are SECCOMP_RET_USER_NOTIF: the loader asks
	// for a listener and the supervisor kills on a notification, naming
	// the syscall.
	Notify bool `json:"notify"`
}
