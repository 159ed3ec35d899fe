//go:build linux

// Package posture reports the confinement a process actually has, seen
// from inside (as amicontained does): namespaces, id maps, capabilities,
// no_new_privs, seccomp and a syscall sweep, mounts, rlimits, cgroup,
// hostname, network interfaces, /dev and the environment's variable
// names. `airlock posture` runs Collect inside a sandbox and adds what
// only the host knows (which namespaces differ from its own).
package posture

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Report is what a process can observe about its own confinement. Fields
// it could not read are left empty and the reason is in Errors.
type Report struct {
	PID          int          `json:"pid"`
	PPID         int          `json:"ppid"`
	Hostname     string       `json:"hostname"`
	Namespaces   []Namespace  `json:"namespaces"`
	UIDMap       []string     `json:"uid_map"`
	GIDMap       []string     `json:"gid_map"`
	Setgroups    string       `json:"setgroups"`
	Capabilities Capabilities `json:"capabilities"`
	// Securebits is nil when prctl(PR_GET_SECUREBITS) was refused.
	Securebits *Securebits `json:"securebits,omitempty"`
	NoNewPrivs int         `json:"no_new_privs"`
	// Seccomp is the mode (0 off, 1 strict, 2 filter) and the number of
	// filters stacked on this process.
	Seccomp        int      `json:"seccomp"`
	SeccompFilters int      `json:"seccomp_filters"`
	Syscalls       Sweep    `json:"syscalls"`
	Mounts         []Mount  `json:"mounts"`
	Rlimits        []Rlimit `json:"rlimits"`
	Cgroup         []string `json:"cgroup"`
	Interfaces     []string `json:"interfaces"`
	Dev            []string `json:"dev"`
	// EnvNames are the names of the environment's variables; never their
	// values, which may hold secrets.
	EnvNames []string `json:"env_names"`
	Errors   []string `json:"errors,omitempty"`
}

// Namespace is one /proc/self/ns entry. HostInode and New are filled in
// by the host (CompareNamespaces); inside, only Inode is known.
type Namespace struct {
	Name      string `json:"name"`
	Inode     uint64 `json:"inode"`
	HostInode uint64 `json:"host_inode,omitempty"`
	New       *bool  `json:"new,omitempty"`
}

// CapSet is one capability set: its mask as status prints it, decoded.
type CapSet struct {
	Hex   string   `json:"hex"`
	Names []string `json:"names"`
}

// Capabilities are the five capability sets of a process.
type Capabilities struct {
	Inheritable CapSet `json:"inheritable"`
	Permitted   CapSet `json:"permitted"`
	Effective   CapSet `json:"effective"`
	Bounding    CapSet `json:"bounding"`
	Ambient     CapSet `json:"ambient"`
}

// Securebits is the securebits mask and its set flags by name.
type Securebits struct {
	Value uint64   `json:"value"`
	Names []string `json:"names"`
}

// Mount is one line of mountinfo.
type Mount struct {
	Target   string `json:"target"`
	FSType   string `json:"fstype"`
	Source   string `json:"source"`
	Options  string `json:"options"`
	ReadOnly bool   `json:"ro"`
	NoSuid   bool   `json:"nosuid"`
	NoDev    bool   `json:"nodev"`
	NoExec   bool   `json:"noexec"`
}

// Rlimit is one resource limit; -1 is unlimited.
type Rlimit struct {
	Name string `json:"name"`
	Soft int64  `json:"soft"`
	Hard int64  `json:"hard"`
}

// Options shape Collect.
type Options struct {
	// SweepCommand is the argv of a child that serves the syscall sweep
	// (a program calling ServeSweep). The sweep runs in a child so that a
	// syscall that ends, stops or changes the prober cannot cost the
	// report. nil = no sweep.
	SweepCommand []string
	// Skip names syscalls the sweep must not call, with the reason (for
	// example the policy's kill rules, which would end the sandbox).
	Skip map[string]string
}

// nsNames are the namespace links of /proc/self/ns that matter.
var nsNames = []string{"user", "pid", "net", "mnt", "ipc", "uts", "cgroup", "time"}

// Collect reports the confinement of the calling process.
func Collect(o Options) *Report {
	r := &Report{PID: os.Getpid()}
	fail := func(what string, err error) { r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", what, err)) }
	// The optional calls below are left out when the policy kills on
	// them; what the Go runtime itself needs cannot be.
	avoid := func(name string) bool {
		why, ok := o.Skip[name]
		if ok {
			fail(name, errors.New("not called: "+why))
		}
		return ok
	}
	if !avoid("getppid") {
		r.PPID = os.Getppid()
	}
	if !avoid("uname") {
		var uts unix.Utsname
		if err := unix.Uname(&uts); err != nil {
			fail("uname", err)
		}
		r.Hostname = unix.ByteSliceToString(uts.Nodename[:])
	}
	ns, err := Namespaces()
	if err != nil {
		fail("namespaces", err)
	}
	for _, n := range nsNames {
		if ino, ok := ns[n]; ok {
			r.Namespaces = append(r.Namespaces, Namespace{Name: n, Inode: ino})
		}
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			fail(path, err)
		}
		return string(b)
	}
	r.UIDMap = idMapLines(read("/proc/self/uid_map"))
	r.GIDMap = idMapLines(read("/proc/self/gid_map"))
	r.Setgroups = strings.TrimSpace(read("/proc/self/setgroups"))

	st := parseStatus(read("/proc/self/status"))
	if r.Capabilities, err = capsFromStatus(st); err != nil {
		fail("capabilities", err)
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"NoNewPrivs", &r.NoNewPrivs}, {"Seccomp", &r.Seccomp}, {"Seccomp_filters", &r.SeccompFilters}} {
		if *f.dst, err = strconv.Atoi(st[f.key]); err != nil {
			fail("status "+f.key, err)
		}
	}
	if !avoid("prctl") {
		if bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0); err == nil {
			r.Securebits = &Securebits{Value: uint64(bits), Names: securebitNames(uint64(bits))}
		} else {
			fail("securebits", err)
		}
	}

	if r.Mounts, err = ParseMountinfo(read("/proc/self/mountinfo")); err != nil {
		fail("mountinfo", err)
	}
	if !avoid("prlimit64") {
		r.Rlimits = rlimits(fail)
	}
	for _, l := range strings.Split(strings.TrimSpace(read("/proc/self/cgroup")), "\n") {
		if l != "" {
			r.Cgroup = append(r.Cgroup, l)
		}
	}
	r.Interfaces = ParseNetDev(read("/proc/net/dev"))
	r.Dev = devEntries(fail)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		r.EnvNames = append(r.EnvNames, name)
	}
	slices.Sort(r.EnvNames)

	r.Syscalls = runSweep(o)
	return r
}

// Namespaces returns the inode of each /proc/self/ns link, by name.
func Namespaces() (map[string]uint64, error) {
	out := map[string]uint64{}
	var firstErr error
	for _, n := range nsNames {
		var st unix.Stat_t
		if err := unix.Stat("/proc/self/ns/"+n, &st); err != nil {
			if firstErr == nil && n != "time" { // time namespaces are recent
				firstErr = fmt.Errorf("%s: %w", n, err)
			}
			continue
		}
		out[n] = st.Ino
	}
	return out, firstErr
}

// CompareNamespaces records, for each namespace of the report, the host's
// inode and whether the report's is a different (new) one.
func (r *Report) CompareNamespaces(host map[string]uint64) {
	for i := range r.Namespaces {
		n := &r.Namespaces[i]
		h, ok := host[n.Name]
		if !ok {
			continue
		}
		isNew := h != n.Inode
		n.HostInode, n.New = h, &isNew
	}
}

var securebitFlags = []string{"noroot", "noroot_locked", "no_setuid_fixup", "no_setuid_fixup_locked",
	"keep_caps", "keep_caps_locked", "no_cap_ambient_raise", "no_cap_ambient_raise_locked"}

func securebitNames(v uint64) []string {
	names := []string{}
	for i, n := range securebitFlags {
		if v&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// rlimitNames are the RLIMIT_* resources by number (asm-generic/resource.h).
var rlimitNames = []string{"cpu", "fsize", "data", "stack", "core", "rss", "nproc", "nofile",
	"memlock", "as", "locks", "sigpending", "msgqueue", "nice", "rtprio", "rttime"}

func rlimits(fail func(string, error)) []Rlimit {
	out := []Rlimit{}
	val := func(v uint64) int64 {
		if v == unix.RLIM_INFINITY {
			return -1
		}
		return int64(v)
	}
	for res, name := range rlimitNames {
		var l unix.Rlimit
		if err := unix.Prlimit(0, res, nil, &l); err != nil {
			fail("prlimit "+name, err)
			continue
		}
		out = append(out, Rlimit{Name: name, Soft: val(l.Cur), Hard: val(l.Max)})
	}
	return out
}

// devEntries lists /dev: name and type (character device major:minor,
// symlink target, directory).
func devEntries(fail func(string, error)) []string {
	ents, err := os.ReadDir("/dev")
	if err != nil {
		fail("/dev", err)
		return nil
	}
	out := []string{}
	for _, e := range ents {
		p := "/dev/" + e.Name()
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			out = append(out, e.Name()+" ?")
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			out = append(out, fmt.Sprintf("%s c %d:%d", e.Name(), unix.Major(st.Rdev), unix.Minor(st.Rdev)))
		case unix.S_IFBLK:
			out = append(out, fmt.Sprintf("%s b %d:%d", e.Name(), unix.Major(st.Rdev), unix.Minor(st.Rdev)))
		case unix.S_IFLNK:
			t, _ := os.Readlink(p)
			out = append(out, e.Name()+" -> "+t)
		case unix.S_IFDIR:
			out = append(out, e.Name()+"/")
		default:
			out = append(out, e.Name())
		}
	}
	return out
}
