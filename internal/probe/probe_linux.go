//go:build linux

// Package probe tells what this host can enforce: the kernel (the new
// mount API), user namespaces (and whether a sysctl or AppArmor restricts
// them), the cgroup mode and a usable cgroup, seccomp and its actions,
// pidfd and Landlock. Run caches its report for the process; the executor
// refuses what it says is missing, and `airlock doctor` prints it with a
// dry run of a real sandbox, the authoritative answer.
package probe

import (
	"errors"
	"fmt"
	"github.com/opencontainers/runc/libcontainer/system/kernelversion"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// Check is one capability: whether it is there, what was seen, and what
// would fix it when it is not.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	// Needed says airlock's default policy depends on it; a missing
	// optional capability only narrows what a policy may ask for.
	Needed bool `json:"needed"`
}

// Report is what the host can enforce, for this user.
type Report struct {
	Kernel     string  `json:"kernel"`
	UID        int     `json:"uid"`
	CgroupMode string  `json:"cgroup_mode"`
	Checks     []Check `json:"checks"`
}

// OK reports whether every needed capability is there.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if c.Needed && !c.OK {
			return false
		}
	}
	return true
}

var once = sync.OnceValue(run)

// Run probes the host once per process and returns the report.
func Run() *Report { return once() }

func run() *Report {
	var uts unix.Utsname
	unix.Uname(&uts)
	r := &Report{Kernel: unix.ByteSliceToString(uts.Release[:]), UID: os.Getuid(), CgroupMode: string(cgroups.HostMode())}
	r.Checks = []Check{
		kernel(r.Kernel),
		userNS(),
		cgroupCheck(),
		seccompCheck(),
		pidfd(),
		landlock(),
	}
	return r
}

func kernel(release string) Check {
	c := Check{Name: "kernel", Needed: true, Detail: release}
	// mount_setattr (recursive read-only binds) and the new mount API. An
	// unparsable release fails closed.
	ok, err := kernelversion.GreaterEqualThan(kernelversion.KernelVersion{Kernel: 5, Major: 12})
	if err != nil {
		c.Detail += ": " + err.Error()
	}
	if c.OK = ok && err == nil; !c.OK {
		c.Fix = "Linux 5.12 or newer is needed (mount_setattr)"
	}
	return c
}

func readSysctl(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

func userNS() Check {
	c := Check{Name: "user namespaces", Needed: true, OK: true}
	var notes []string
	if n, ok := readSysctl("/proc/sys/user/max_user_namespaces"); ok {
		notes = append(notes, fmt.Sprintf("user.max_user_namespaces=%d", n))
		if n == 0 {
			c.OK, c.Fix = false, "sysctl -w user.max_user_namespaces=15000"
		}
	}
	if n, ok := readSysctl("/proc/sys/kernel/unprivileged_userns_clone"); ok {
		notes = append(notes, fmt.Sprintf("kernel.unprivileged_userns_clone=%d", n))
		if n == 0 && os.Getuid() != 0 {
			c.OK, c.Fix = false, "sysctl -w kernel.unprivileged_userns_clone=1"
		}
	}
	if n, ok := readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok {
		notes = append(notes, fmt.Sprintf("kernel.apparmor_restrict_unprivileged_userns=%d", n))
		if n == 1 && os.Getuid() != 0 {
			// Creation succeeds but the namespace gets no capabilities:
			// the dry run below is the authoritative answer.
			c.Fix = "if the dry run fails: an AppArmor profile allowing userns for this binary, or sysctl kernel.apparmor_restrict_unprivileged_userns=0"
		}
	}
	c.Detail = strings.Join(notes, ", ")
	return c
}

func cgroupCheck() Check {
	c := Check{Name: "cgroup limits", Detail: "mode " + string(cgroups.HostMode())}
	p, err := cgroups.Find("")
	if err != nil {
		var u *policy.UnsupportedError
		if errors.As(err, &u) {
			c.Detail += ": " + u.Reason
			c.Fix = u.Fix + "; until then explicit --memory/--pids/--cpus are refused and the defaults use rlimits (or pass --best-effort)"
		} else {
			c.Detail += ": " + err.Error()
		}
		return c
	}
	c.OK = true
	c.Detail += fmt.Sprintf(": %s under %s", p.Backend(), p.Dir())
	return c
}

// Seccomp return actions, for SECCOMP_GET_ACTION_AVAIL.
var actions = []struct {
	name string
	ret  uint32
}{{"kill_process", 0x80000000}, {"errno", 0x00050000}, {"user_notif", seccomp.RetUserNotif}, {"log", 0x7ffc0000}}

func seccompCheck() Check {
	c := Check{Name: "seccomp", Needed: true}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil {
		c.Detail, c.Fix = "the kernel has no seccomp: "+err.Error(), "a kernel built with CONFIG_SECCOMP_FILTER"
		return c
	}
	var have, missing []string
	for _, a := range actions {
		if seccomp.ActionAvailable(a.ret) {
			have = append(have, a.name)
		} else {
			missing = append(missing, a.name)
		}
	}
	lib := seccomp.LibraryVersion()
	c.Detail = fmt.Sprintf("actions %s; libseccomp %s", strings.Join(have, ", "), or(lib, "absent (built without cgo)"))
	if mode != 0 {
		c.Detail += "; this process is already under a seccomp filter (nested filters stack)"
	}
	switch {
	case lib == "":
		c.Fix = "build airlock with CGO_ENABLED=1 and libseccomp-dev"
	case slicesContains(missing, "kill_process") || slicesContains(missing, "errno"):
		c.Fix = "Linux 4.14 or newer (SECCOMP_RET_KILL_PROCESS)"
	default:
		c.OK = true
		if !seccomp.NotifySupported() || slicesContains(missing, "user_notif") {
			c.Detail += "; kill rules cannot name their syscall (needs Linux 5.7 and libseccomp 2.5)"
		}
	}
	return c
}

func pidfd() Check {
	c := Check{Name: "pidfd", Detail: "race-free kill and wait"}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		c.Detail, c.Fix = "pidfd_open: "+err.Error(), "Linux 5.3 or newer"
		return c
	}
	unix.Close(fd)
	c.OK = true
	return c
}

func landlock() Check {
	c := Check{Name: "landlock", Detail: "optional layer (not used yet)"}
	const createRulesetVersion = 1
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(nil)), 0, createRulesetVersion)
	if errno != 0 {
		c.Detail = "unavailable: " + errno.Error()
		c.Fix = "Linux 5.13+ with lsm=...,landlock"
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("ABI %d", abi)
	return c
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Get returns the named check.
func (r *Report) Get(name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{Name: name}
}
