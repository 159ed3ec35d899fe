package posture

import (
	"fmt"
	"strconv"
	"strings"
)

// capNames are the capability names by bit number (linux/capability.h).
var capNames = []string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
	"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
	"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// DecodeCaps turns a capability mask as /proc/<pid>/status prints it
// (16 hex digits) into capability names; bits past the known ones are
// named cap_N, so a newer kernel's capability is never hidden.
func DecodeCaps(hex string) ([]string, error) {
	mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("capability mask %q: %w", hex, err)
	}
	names := []string{}
	for bit := 0; bit < 64; bit++ {
		if mask&(1<<bit) == 0 {
			continue
		}
		if bit < len(capNames) {
			names = append(names, "cap_"+capNames[bit])
		} else {
			names = append(names, "cap_"+strconv.Itoa(bit))
		}
	}
	return names, nil
}

// parseStatus splits /proc/<pid>/status into its "Key:\tvalue" fields.
func parseStatus(data string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(data, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// capsFromStatus reads the five capability sets of a status file.
func capsFromStatus(st map[string]string) (Capabilities, error) {
	var c Capabilities
	for _, s := range []struct {
		key string
		dst *CapSet
	}{{"CapInh", &c.Inheritable}, {"CapPrm", &c.Permitted}, {"CapEff", &c.Effective}, {"CapBnd", &c.Bounding}, {"CapAmb", &c.Ambient}} {
		v, ok := st[s.key]
		if !ok {
			return c, fmt.Errorf("status has no %s", s.key)
		}
		names, err := DecodeCaps(v)
		if err != nil {
			return c, err
		}
		*s.dst = CapSet{Hex: v, Names: names}
	}
	return c, nil
}

// ParseMountinfo parses /proc/<pid>/mountinfo (proc(5)): mount point,
// filesystem type, source and the flags that matter for confinement. A
// mount is read-only when either the mount or its superblock is.
func ParseMountinfo(data string) ([]Mount, error) {
	var mounts []Mount
	for i, line := range strings.Split(data, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for j := 6; j < len(f); j++ {
			if f[j] == "-" {
				sep = j
				break
			}
		}
		if len(f) < 6 || sep < 0 || len(f) < sep+3 {
			return nil, fmt.Errorf("mountinfo line %d: malformed: %q", i+1, line)
		}
		m := Mount{Target: unescapeOctal(f[4]), FSType: f[sep+1], Source: unescapeOctal(f[sep+2]), Options: f[5]}
		for _, o := range strings.Split(f[5], ",") {
			switch o {
			case "ro":
				m.ReadOnly = true
			case "nosuid":
				m.NoSuid = true
			case "nodev":
				m.NoDev = true
			case "noexec":
				m.NoExec = true
			}
		}
		if sep+3 < len(f) {
			for _, o := range strings.Split(f[sep+3], ",") {
				if o == "ro" {
					m.ReadOnly = true
				}
			}
		}
		mounts = append(mounts, m)
	}
	return mounts, nil
}

// unescapeOctal undoes the kernel's \ooo escaping of space, tab, newline
// and backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ParseNetDev returns the interface names of /proc/net/dev.
func ParseNetDev(data string) []string {
	names := []string{}
	for _, line := range strings.Split(data, "\n") {
		name, _, ok := strings.Cut(line, ":")
		if ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}

// idMapLines normalises a uid_map or gid_map: one "inside outside count"
// line per range.
func idMapLines(data string) []string {
	lines := []string{}
	for _, line := range strings.Split(data, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	return lines
}
