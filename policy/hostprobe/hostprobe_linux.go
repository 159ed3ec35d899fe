//go:build linux

package hostprobe

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"github.com/opencontainers/runc/libcontainer/system/kernelversion"
	"golang.org/x/sys/unix"
)

// Options are what the probe cannot know about its caller.
type Options struct {
	// CgroupParent is the cgroup the caller would make per-run cgroups
	// under (executor.Config.CgroupParent); "" = its own, discovered.
	CgroupParent string
	// CgroupMoveSelf says the caller would move itself into a leaf of its
	// own cgroup to use it (executor.Config.CgroupMoveSelf). The probe
	// only judges whether that would work; it moves nothing.
	CgroupMoveSelf bool
	// NoCgroup leaves the cgroup check out of the Host (Get reports it
	// missing): for a caller that sets its cgroup up itself and records
	// the outcome with Host.Set, as executor.New does, so that the
	// cgroup filesystem is not read twice.
	NoCgroup bool
}

// Probe returns what this host can enforce for this user. It has no side
// effects and caches nothing (see the package doc).
func Probe(opts Options) *policy.Host {
	var uts unix.Utsname
	unix.Uname(&uts)
	h := &policy.Host{Kernel: unix.ByteSliceToString(uts.Release[:]), UID: os.Getuid(), CgroupMode: string(cgroups.HostMode())}
	h.Checks = []policy.Capability{kernel(h.Kernel), userNS()}
	if !opts.NoCgroup {
		cg, limits := cgroupCheck(opts)
		h.Checks, h.Limits = append(h.Checks, cg), limits
	}
	h.Checks = append(h.Checks, seccompCheck(), notifyCheck(), pidfd())
	h.Landlock = landlockABI()
	h.Checks = append(h.Checks, landlockChecks(h.Landlock)...)
	return h
}

func kernel(release string) policy.Capability {
	c := policy.Capability{ID: policy.CheckKernel, Name: "kernel", Needed: true, Detail: release}
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

func userNS() policy.Capability {
	c := policy.Capability{ID: policy.CheckUserNS, Name: "user namespaces", Needed: true, OK: true}
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

// cgroupCheck says whether per-run cgroups can be made, and where
// ("cgroup2" or "cgroup1"), as cgroups.Find would for opts, writing
// nothing.
func cgroupCheck(opts Options) (policy.Capability, string) {
	c := policy.Capability{ID: policy.CheckCgroup, Name: "cgroup limits", Detail: "mode " + string(cgroups.HostMode())}
	p, err := cgroups.Inspect(opts.CgroupParent, opts.CgroupMoveSelf)
	if err != nil {
		var u *policy.UnsupportedError
		if errors.As(err, &u) {
			c.Detail += ": " + u.Reason
			c.Fix = u.Fix + "; until then explicit --memory/--pids/--cpus are refused and the defaults use rlimits (or pass --best-effort)"
		} else {
			c.Detail += ": " + err.Error()
		}
		return c, ""
	}
	c.OK = true
	c.Detail += fmt.Sprintf(": %s under %s", p.Backend(), p.Dir())
	return c, p.Backend()
}

// Seccomp return actions, for SECCOMP_GET_ACTION_AVAIL.
var actions = []struct {
	name string
	ret  uint32
}{{"kill_process", 0x80000000}, {"errno", 0x00050000}, {"user_notif", seccomp.RetUserNotif}, {"log", 0x7ffc0000}}

func seccompCheck() policy.Capability {
	c := policy.Capability{ID: policy.CheckSeccomp, Name: "seccomp", Needed: true}
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
	c.Detail = fmt.Sprintf("actions %s; libseccomp %s", or(strings.Join(have, ", "), "none available"), or(lib, "absent (built without cgo)"))
	if mode != 0 {
		c.Detail += "; this process is already under a seccomp filter (nested filters stack)"
	}
	// Under a filter of its own (mode 2) whose answer to seccomp(2) is an
	// error, every probe fails alike and the kernel's age is not the
	// cause: a filter load with no program fails with EFAULT wherever the
	// call itself is let through.
	outer := mode != 0 && !seccomp.LoadReachable()
	if outer {
		c.Detail += "; that filter refuses the seccomp(2) call itself"
	}
	switch {
	case lib == "":
		c.Fix = "build airlock with CGO_ENABLED=1 and libseccomp-dev (which also builds in the sandbox's reaper), or load filters that airlock-daemon compiled (executor.Config.SeccompCacheDir) and start sandboxes with its airlock-spawn (Config.SpawnPath)"
	case outer:
		c.Fix = "allow seccomp(2) in the filter this process runs under (a container runtime's profile: docker's and podman's default profiles allow it; a custom --security-opt seccomp=FILE, or a systemd unit's SystemCallFilter=, may not), or run airlock outside it"
	case slices.Contains(missing, "kill_process") || slices.Contains(missing, "errno"):
		c.Fix = "Linux 4.14 or newer (SECCOMP_RET_KILL_PROCESS)"
	default:
		c.OK = true
	}
	return c
}

// notifyCheck: seccomp user notification, through which a kill rule's
// result names its syscall (SECCOMP_RET_USER_NOTIF in the kernel and
// libseccomp API 6).
func notifyCheck() policy.Capability {
	c := policy.Capability{ID: policy.CheckSeccompNotify, Name: "seccomp notify", Detail: "kill rules name their syscall"}
	if !seccomp.NotifySupported() || !seccomp.ActionAvailable(seccomp.RetUserNotif) {
		c.Detail, c.Fix = "kill rules cannot name their syscall", "Linux 5.7 and libseccomp 2.5 (API 6)"
		return c
	}
	c.OK = true
	return c
}

func pidfd() policy.Capability {
	c := policy.Capability{ID: policy.CheckPidfd, Name: "pidfd", Detail: "race-free kill and wait"}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		c.Detail, c.Fix = "pidfd_open: "+err.Error(), "Linux 5.3 or newer"
		return c
	}
	unix.Close(fd)
	c.OK = true
	return c
}

// landlockABI is the kernel's Landlock ABI version (0: none, or
// disabled at boot), asked with landlock_create_ruleset's version flag,
// which creates nothing.
func landlockABI() int {
	const createRulesetVersion = 1
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(nil)), 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

// landlockChecks are the Landlock checks for a kernel of ABI abi: what
// the process backend isolates with it, and from which ABI.
func landlockChecks(abi int) []policy.Capability {
	var out []policy.Capability
	for _, l := range []struct {
		id         policy.CheckID
		name, what string
		min        int
		kernel     string
	}{
		{policy.CheckLandlock, "landlock", "filesystem rules: the process backend's filesystem isolation, a second layer in the jail", policy.LandlockFS, "5.13"},
		{policy.CheckLandlockNet, "landlock network", "TCP rules: the process backend's network isolation (net none)", policy.LandlockNet, "6.7"},
		{policy.CheckLandlockScope, "landlock scopes", "the process backend's signal and abstract unix socket isolation", policy.LandlockScope, "6.12"},
	} {
		c := policy.Capability{ID: l.id, Name: l.name, OK: abi >= l.min}
		c.Detail = fmt.Sprintf("ABI %d (%s, from ABI %d)", abi, l.what, l.min)
		if abi == 0 {
			c.Detail = fmt.Sprintf("no Landlock (%s need ABI %d)", l.what, l.min)
		}
		if !c.OK {
			c.Fix = fmt.Sprintf("Linux %s or newer with Landlock enabled (CONFIG_SECURITY_LANDLOCK, lsm=...,landlock)", l.kernel)
		}
		out = append(out, c)
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
