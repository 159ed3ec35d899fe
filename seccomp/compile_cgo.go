//go:build cgo && linux

package seccomp

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/airlock-sandbox/airlock/policy"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// This file is the only one that uses cgo (libseccomp). It runs in the
// parent only; the init loads the exported bytes with a raw syscall.

// compileNative compiles the plan's libseccomp part and exports it.
func compileNative(pl *plan) (Program, error) {
	def, err := scmpAction(pl.defaultRet)
	if err != nil {
		return nil, err
	}
	f, err := libseccomp.NewFilter(def)
	if err != nil {
		return nil, fmt.Errorf("seccomp: libseccomp: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: bad arch action: %w", err)
	}
	// Binary-tree dispatch; libseccomp <= 2.5.4 misbehaves with it on an
	// empty rule set.
	if len(pl.native) > 0 {
		if err := f.SetOptimize(2); err != nil {
			return nil, &policy.UnsupportedError{Control: "seccomp", Reason: "libseccomp cannot build a binary-tree filter: " + err.Error(), Fix: "install libseccomp >= 2.5"}
		}
	}
	for _, r := range pl.native {
		act, err := scmpAction(r.ret)
		if err != nil {
			return nil, err
		}
		var conds []libseccomp.ScmpCondition
		for _, a := range r.args {
			c, err := scmpCondition(a)
			if err != nil {
				return nil, err
			}
			conds = append(conds, c)
		}
		if len(conds) == 0 {
			err = f.AddRule(libseccomp.ScmpSyscall(r.nr), act)
		} else {
			err = f.AddRuleConditional(libseccomp.ScmpSyscall(r.nr), act, conds)
		}
		if err != nil {
			return nil, policy.Invalid("seccomp rule", "syscall %d: %v", r.nr, err)
		}
	}
	return export(f)
}

// export writes the filter's BPF into a memfd and reads it back
// (ExportBPFMem needs libseccomp 2.6).
func export(f *libseccomp.ScmpFilter) (Program, error) {
	fd, err := unix.MemfdCreate("airlock-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		// A SetupError is classified by its errno: out of fds (EMFILE,
		// ENFILE) or memory is transient, a retry can help.
		return nil, &policy.SetupError{Stage: "seccomp compile", Err: fmt.Errorf("memfd: %w", err)}
	}
	file := os.NewFile(uintptr(fd), "airlock-seccomp")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("BUG(airlock): libseccomp exported %d bytes, not whole instructions", len(raw))
	}
	p := make(Program, len(raw)/8)
	for i := range p {
		b := raw[8*i:]
		p[i] = Instruction{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	return p, nil
}

func scmpAction(ret uint32) (libseccomp.ScmpAction, error) {
	switch {
	case ret == retAllow:
		return libseccomp.ActAllow, nil
	case ret == retLog:
		return libseccomp.ActLog, nil
	case ret == retKillProcess:
		return libseccomp.ActKillProcess, nil
	case ret == retUserNotif:
		return libseccomp.ActNotify, nil
	case ret&0xffff0000 == retErrno:
		return libseccomp.ActErrno.SetReturnCode(int16(ret & 0xffff)), nil
	}
	return 0, fmt.Errorf("BUG(airlock): seccomp return value %#x", ret)
}

func scmpCondition(a policy.ArgCondition) (libseccomp.ScmpCondition, error) {
	ops := map[policy.ArgOp]libseccomp.ScmpCompareOp{
		policy.OpEq: libseccomp.CompareEqual, policy.OpNe: libseccomp.CompareNotEqual,
		policy.OpLt: libseccomp.CompareLess, policy.OpLe: libseccomp.CompareLessOrEqual,
		policy.OpGt: libseccomp.CompareGreater, policy.OpGe: libseccomp.CompareGreaterEqual,
	}
	if a.Op == policy.OpMaskedEq {
		// libseccomp's first operand is the mask, the second the datum.
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareMaskedEqual, a.Mask, a.Value)
	}
	op, ok := ops[a.Op]
	if !ok {
		return libseccomp.ScmpCondition{}, policy.Invalid("seccomp rule", "op %q", a.Op)
	}
	return libseccomp.MakeCondition(a.Index, op, a.Value)
}

// CanCompile reports whether this binary compiles seccomp filters itself:
// with cgo it links libseccomp.
func CanCompile() bool { return true }

// LibraryVersion is the linked libseccomp's version, "" without cgo.
func LibraryVersion() string {
	a, b, c := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

// NotifySupported reports whether libseccomp can emit user notification
// (API level 6).
func NotifySupported() bool {
	api, err := libseccomp.GetAPI()
	return err == nil && api >= 6
}
