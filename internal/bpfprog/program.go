// Package bpfprog is a seccomp filter as the sandbox init needs it: a
// raw classic BPF program, its wire form, and loading it. It is the part
// of package seccomp (which re-exports every name here) that the init
// links: no compiler, no libseccomp, no profiles, so that the init
// binary starts without their packages' initialization.
package bpfprog

import (
	"encoding/binary"
	"fmt"
	"slices"
)

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

// Filter is a compiled filter and what it came from, as the jail needs it.
type Filter struct {
	// Profile names the profile ("default", a file path).
	Profile string
	// Rules is the profile's number of (syscall, rule) pairs.
	Rules int
	// Program is the BPF to load.
	Program Program
	// Notify says kill actions are SECCOMP_RET_USER_NOTIF: the loader asks
	// for a listener and the supervisor kills on a notification, naming
	// the syscall.
	Notify bool
}

// AppendRaw appends p as raw struct sock_filter records (8 bytes each,
// little-endian), as the kernel takes them.
func (p Program) AppendRaw(b []byte) []byte {
	b = slices.Grow(b, 8*len(p)) // one allocation at most, not one per doubling
	for _, in := range p {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// ParseRaw decodes AppendRaw's form.
func ParseRaw(raw []byte) (Program, error) {
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("seccomp: program of %d bytes is not whole instructions", len(raw))
	}
	p := make(Program, len(raw)/8)
	for i := range p {
		r := raw[8*i:]
		p[i] = Instruction{Code: binary.LittleEndian.Uint16(r), Jt: r[2], Jf: r[3], K: binary.LittleEndian.Uint32(r[4:])}
	}
	return p, nil
}
