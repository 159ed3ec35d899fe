//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"

	"github.com/airlock-sandbox/airlock/policy"
	moby "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// denied are refused (EPERM) by the default profile whatever the Docker
// profile allows: kernel attack surface an untrusted program never needs.
var denied = []string{
	// io_uring runs operations seccomp never sees.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Exploit enablers.
	"userfaultfd", "bpf", "perf_event_open",
	// Keyrings are not namespaced.
	"keyctl", "add_key", "request_key",
	// Namespaces (clone with namespace flags is refused below).
	"unshare", "setns",
	// The mount family.
	"mount", "umount2", "mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "pivot_root", "chroot",
	// Other processes' memory.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	// Kernel code and machine state.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "vhangup", "settimeofday", "clock_settime",
	// Clock steering, reads included: Docker allows both (writes need
	// CAP_SYS_TIME), but clock_adjtime also reaches the dynamic POSIX
	// clocks' drivers, and nothing a sandboxed program runs needs either.
	"adjtimex", "clock_adjtime",
	// Host files by handle (shocker).
	"open_by_handle_at",
	// x86 only: descriptor tables and I/O ports.
	"modify_ldt", "iopl", "ioperm",
	"fanotify_init", "lookup_dcookie",
}

// DefaultDenied returns the calls the default profile refuses whatever
// the Docker profile allows (a copy).
func DefaultDenied() []string { return slices.Clone(denied) }

// DefaultProfile returns airlock's default filter: Docker's default
// profile for a process with no capabilities (github.com/moby/profiles),
// native architecture only, tightened: the denied list above, clone only
// without namespace flags, clone3 ENOSYS (glibc falls back to clone),
// personality only to query or set PER_LINUX, ioctl without TIOCSTI and
// TIOCLINUX (compared on the low 32 bits, as the kernel does), and
// sockets of the AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE families
// only.
func DefaultProfile() (*Profile, error) {
	oci, err := moby.GetDefaultProfile(&specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}})
	if err != nil {
		return nil, fmt.Errorf("seccomp: docker default profile: %w", err)
	}
	p, err := FromOCI("default", oci)
	if err != nil {
		return nil, err
	}
	table := sysnums[runtime.GOARCH]
	var names []string
	for _, n := range denied {
		if _, ok := table[n]; ok { // some are x86 only
			names = append(names, n)
		}
	}
	const low32 = 0xffffffff
	p.Override(
		deny(int(unix.EPERM), names...),
		policy.SyscallRule{Names: []string{"personality"}, Action: policy.ActAllow, Args: []policy.ArgCondition{{Index: 0, Op: policy.OpEq, Value: 0}}},
		policy.SyscallRule{Names: []string{"personality"}, Action: policy.ActAllow, Args: []policy.ArgCondition{{Index: 0, Op: policy.OpEq, Value: low32}}},
		policy.SyscallRule{Names: []string{"ioctl"}, Action: policy.ActErrno, Errno: int(unix.EPERM), Args: []policy.ArgCondition{{Index: 1, Op: policy.OpMaskedEq, Mask: low32, Value: unix.TIOCSTI}}},
		policy.SyscallRule{Names: []string{"ioctl"}, Action: policy.ActErrno, Errno: int(unix.EPERM), Args: []policy.ArgCondition{{Index: 1, Op: policy.OpMaskedEq, Mask: low32, Value: unix.TIOCLINUX}}},
		policy.SyscallRule{Names: []string{"ioctl"}, Action: policy.ActAllow},
		socketFamily(unix.AF_UNIX), socketFamily(unix.AF_INET), socketFamily(unix.AF_INET6),
		policy.SyscallRule{Names: []string{"socket"}, Action: policy.ActAllow, Args: []policy.ArgCondition{
			{Index: 0, Op: policy.OpEq, Value: unix.AF_NETLINK}, {Index: 2, Op: policy.OpEq, Value: unix.NETLINK_ROUTE}}},
	)
	return p, nil
}

func socketFamily(af uint64) policy.SyscallRule {
	return policy.SyscallRule{Names: []string{"socket"}, Action: policy.ActAllow, Args: []policy.ArgCondition{{Index: 0, Op: policy.OpEq, Value: af}}}
}

// Resolve builds the profile a policy asks for: its base, with its rules
// applied. It returns nil for profile "none". An imported profile is read
// from its file; see ResolveData to use bytes read already.
func Resolve(s policy.Seccomp) (*Profile, error) {
	body, err := ReadProfile(s)
	if err != nil {
		return nil, err
	}
	return ResolveData(s, body)
}

// Imported reports whether s imports a Docker or OCI profile file.
func Imported(s policy.Seccomp) bool {
	return s.Profile != "" && s.Profile != "default" && s.Profile != "none"
}

// ReadProfile reads the profile file s imports (nil when it imports
// none). A caller that keys a cache by the file's content reads it once
// and passes the same bytes to ResolveData, so what is compiled is what
// was keyed, whatever happens to the file in between.
func ReadProfile(s policy.Seccomp) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !Imported(s) {
		return nil, nil
	}
	body, err := os.ReadFile(s.Profile)
	if err != nil {
		return nil, policy.Invalid("seccomp profile", "%v", err)
	}
	return body, nil
}

// ResolveData is Resolve with the imported profile's content given
// (ReadProfile's), never read from the file again.
func ResolveData(s policy.Seccomp, body []byte) (*Profile, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var p *Profile
	var err error
	switch {
	case s.Profile == "none":
		return nil, nil
	case !Imported(s):
		p, err = DefaultProfile()
	default:
		p, err = Import(s.Profile, body)
	}
	if err != nil {
		return nil, err
	}
	p.Override(s.Rules...)
	return p, nil
}

// Import converts a Docker or OCI seccomp JSON profile, named name.
// Docker's conditional entries (includes/excludes by architecture,
// kernel, capabilities) are expanded for this host and a process with no
// capabilities. Only the native architecture is compiled; the profile's
// flags are ignored.
func Import(name string, body []byte) (*Profile, error) {
	oci, err := moby.LoadProfile(string(body), &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}})
	if err != nil {
		return nil, policy.Invalid("seccomp profile", "%s: %v", name, err)
	}
	return FromOCI(name, oci)
}

// FromOCI converts an OCI seccomp configuration.
func FromOCI(name string, oci *specs.LinuxSeccomp) (*Profile, error) {
	if oci == nil {
		return nil, policy.Invalid("seccomp profile", "%s: empty", name)
	}
	defErrno := int(unix.EPERM)
	if oci.DefaultErrnoRet != nil {
		defErrno = int(*oci.DefaultErrnoRet)
	}
	act, errno, err := ociAction(oci.DefaultAction, defErrno)
	if err != nil {
		return nil, policy.Invalid("seccomp profile", "%s: default action: %v", name, err)
	}
	p := &Profile{Name: name, DefaultAction: act, DefaultErrno: errno}
	for _, sc := range oci.Syscalls {
		e := int(unix.EPERM)
		if sc.ErrnoRet != nil {
			e = int(*sc.ErrnoRet)
		}
		act, errno, err := ociAction(sc.Action, e)
		if err != nil {
			return nil, policy.Invalid("seccomp profile", "%s: %v: %v", name, sc.Names, err)
		}
		r := policy.SyscallRule{Names: sc.Names, Action: act, Errno: errno}
		for _, a := range sc.Args {
			c := policy.ArgCondition{Index: a.Index, Value: a.Value}
			switch a.Op {
			case specs.OpEqualTo:
				c.Op = policy.OpEq
			case specs.OpNotEqual:
				c.Op = policy.OpNe
			case specs.OpLessThan:
				c.Op = policy.OpLt
			case specs.OpLessEqual:
				c.Op = policy.OpLe
			case specs.OpGreaterThan:
				c.Op = policy.OpGt
			case specs.OpGreaterEqual:
				c.Op = policy.OpGe
			case specs.OpMaskedEqual:
				// OCI: value is the mask, valueTwo the datum.
				c.Op, c.Mask, c.Value = policy.OpMaskedEq, a.Value, a.ValueTwo
			default:
				return nil, policy.Invalid("seccomp profile", "%s: unknown operator %q", name, a.Op)
			}
			r.Args = append(r.Args, c)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("seccomp profile %s: %w", name, err)
		}
		p.Rules = append(p.Rules, r)
	}
	return p, nil
}

var errTrace = errors.New("SCMP_ACT_TRACE needs a tracer; airlock has none")

func ociAction(a specs.LinuxSeccompAction, errno int) (policy.SyscallAction, int, error) {
	switch a {
	case specs.ActAllow:
		return policy.ActAllow, 0, nil
	case specs.ActErrno:
		return policy.ActErrno, errno, nil
	case specs.ActKill, specs.ActKillProcess, specs.ActKillThread, specs.ActTrap:
		// Trap's SIGSYS can be caught; airlock only kills.
		return policy.ActKill, 0, nil
	case specs.ActLog:
		return policy.ActLog, 0, nil
	case specs.ActTrace:
		return "", 0, errTrace
	}
	return "", 0, fmt.Errorf("action %q is not supported", a)
}
