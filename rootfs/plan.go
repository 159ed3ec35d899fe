package rootfs

import (
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
)

// Kind is the kind of one step of a Plan.
type Kind string

const (
	// KindTmpfs mounts a fresh tmpfs at Target with Options (e.g.
	// "size=64m,mode=1777"). Always nosuid and nodev.
	KindTmpfs Kind = "tmpfs"
	// KindBind binds the host path Source at Target, recursively
	// (submounts included), nosuid and nodev (but see CharDevice);
	// ReadOnly makes the whole tree read-only. Source may be a directory
	// or a file.
	KindBind Kind = "bind"
	// KindProc mounts a fresh procfs of the sandbox's pid namespace
	// (nosuid, nodev, noexec: NoExec is required).
	KindProc Kind = "proc"
	// KindCover re-binds Target, a path already inside the new root,
	// read-only onto itself (used to cover writable holes in /proc):
	// ReadOnly and NoExec are required.
	KindCover Kind = "cover"
	// KindMask hides Target, an entry already inside the new root (in
	// /proc), when it exists: a file under an empty read-only file, a
	// directory under an empty read-only tmpfs. ReadOnly and NoExec are
	// required, KeepDevices and Optional refused.
	KindMask Kind = "mask"
	// KindDevpts mounts a private devpts instance at Target (ptys of the
	// sandbox only, new ones mode 0620, its ptmx 0666): NoExec is
	// required, KeepDevices makes the ptys usable.
	KindDevpts Kind = "devpts"
	// KindMqueue mounts the POSIX message queues of the sandbox's IPC
	// namespace at Target, as hosts and Docker have /dev/mqueue: NoExec
	// is required; Optional skips it on a kernel without them. Queues
	// exist without it; with it they can be listed and removed (a
	// recycled sandbox's reaper empties it between runs).
	KindMqueue Kind = "mqueue"
	// KindDir creates the directory Target.
	KindDir Kind = "dir"
	// KindSymlink creates Target as a symlink to Source.
	KindSymlink Kind = "symlink"
	// KindFile creates Target holding Data.
	KindFile Kind = "file"
)

// Op is one step of a Plan.
type Op struct {
	Kind    Kind   `json:"kind"`
	Source  string `json:"source,omitempty"`
	Target  string `json:"target"`
	Options string `json:"options,omitempty"` // tmpfs options
	Data    string `json:"data,omitempty"`    // file contents
	// The mount attributes of a mount (every kind but dir, symlink and
	// file) are these three fields alone, whatever its kind: always
	// nosuid; nodev unless KeepDevices; ro and noexec as ReadOnly and
	// NoExec say (recursively for binds and covers). Validate refuses
	// an op that would get fewer than its kind needs.
	ReadOnly bool `json:"read_only,omitempty"`
	NoExec   bool `json:"no_exec,omitempty"`
	// KeepDevices leaves out nodev, so device nodes stay usable: only on
	// a devpts, a character-device bind (noexec instead: a device node
	// is useless on a nodev mount) and a cover (the cover of /dev, whose
	// bound nodes it copies).
	KeepDevices bool `json:"keep_devices,omitempty"`
	// Optional skips a bind or cover whose source does not exist, and an
	// mqueue the kernel lacks.
	Optional bool `json:"optional,omitempty"`
	// CharDevice requires a bind source to be a character device (the
	// /dev nodes), so a swapped /dev/null is refused, not bound. Such a
	// bind must be NoExec; KeepDevices makes the node usable.
	CharDevice bool `json:"char_device,omitempty"`
}

// Plan is the whole filesystem of a sandbox: a list of steps carried out in
// order on a fresh tmpfs that then becomes the root. It is pure data,
// computed in the parent and obeyed by the init.
type Plan struct {
	// RootOptions are the tmpfs options of the root.
	RootOptions string `json:"root_options"`
	Ops         []Op   `json:"ops"`
}

// Options shapes the default plan.
type Options struct {
	// Workspace is a host directory bound writable at /workspace; "" gives
	// a tmpfs.
	Workspace string
	// TmpfsSize is the size of each writable tmpfs (/tmp, /workspace,
	// /dev/shm and user tmpfs without a size), in bytes. 0 = 64 MiB.
	TmpfsSize int64
	// WorkspaceSize is the size of a tmpfs /workspace (no Workspace).
	// 0 = TmpfsSize.
	WorkspaceSize int64
	// Hostname goes into the synthetic /etc/hostname and /etc/hosts.
	Hostname string
	// HostNetwork says the sandbox shares the host's network: it gets the
	// host's resolver configuration (/etc/resolv.conf and /etc/hosts,
	// copied into files of its own) and, as with CACerts, its CA
	// certificates. Without it, /etc/hosts is synthetic and there is no
	// resolv.conf: no name can resolve where no resolver is reachable.
	HostNetwork bool
	// Console is a host terminal, the slave of the pty the caller relays
	// as the program's stdio (--tty), bound at /dev/console as docker
	// does: ttyname (tty, ps) finds the program's terminal there. "" =
	// none.
	Console string
	// UID and GID are the program's ids inside: /etc/passwd and
	// /etc/group name them "sandbox" (unless 0: root), home /workspace.
	UID, GID int
	// CACerts binds the host's CA certificates (/etc/ssl/certs, what
	// Debian's ca-certificates installs; its links point into /usr),
	// read-only: for a sandbox that reaches out through a proxy.
	CACerts bool
	// Extra steps are appended after the default filesystem, in order.
	Extra []Op
}

// systemDirs are bound read-only when they are directories and recreated
// as symlinks when they are symlinks (merged /usr).
var systemDirs = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcBinds are the only host /etc entries visible inside whatever the
// network: what the dynamic loader and Debian's alternatives need, the
// service and protocol tables (getservbyname, getaddrinfo with a service
// name) and the locale aliases. They say nothing about the host. All
// else under /etc is synthetic, absent, or a network's (netEtc).
var etcBinds = []string{"/etc/ld.so.cache", "/etc/alternatives", "/etc/services", "/etc/protocols", "/etc/locale.alias"}

// caCerts is where Debian's ca-certificates puts the trusted roots.
const caCerts = "/etc/ssl/certs"

// maxEtcCopy bounds a host /etc file copied into the plan.
const maxEtcCopy = 64 << 10

// devNodes are the host character devices bound into the minimal /dev.
// (tty opens the opener's own controlling terminal: in a sandbox, only
// ever one of its private ptys.)
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// procCovers are writable or sensitive corners of /proc made read-only.
var procCovers = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}

// procMasks are /proc entries that show host state the sandbox has no use
// for and that its own pid namespace does not scope: the kernel keyring
// tables list the descriptions of every key of the sandbox's host uid
// (rootless, the caller's own keys), the rest leak host memory, timers
// and hardware (runc masks the same set).
var procMasks = []string{"/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/timer_list",
	"/proc/sched_debug", "/proc/latency_stats", "/proc/acpi", "/proc/asound", "/proc/scsi"}

// Default builds DESIGN.md's default filesystem: a read-only tmpfs root,
// read-only recursive binds of /usr and the system directories, a few
// /etc files, fresh /proc with read-only covers, a minimal /dev with
// /dev/shm, tmpfs /tmp and a writable /workspace. It reads the host only
// to learn which system directories are symlinks.
func Default(o Options) (Plan, error) {
	size := o.TmpfsSize
	if size <= 0 {
		size = 64 << 20
	}
	host := o.Hostname
	if host == "" {
		host = "airlock"
	}
	p := Plan{RootOptions: "size=1m,nr_inodes=4096,mode=0755"}
	add := func(op Op) { p.Ops = append(p.Ops, op) }

	add(Op{Kind: KindBind, Source: "/usr", Target: "/usr", ReadOnly: true})
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(d)
			if err != nil {
				return Plan{}, fmt.Errorf("rootfs: readlink %s: %w", d, err)
			}
			add(Op{Kind: KindSymlink, Source: link, Target: d})
		case fi.IsDir():
			add(Op{Kind: KindBind, Source: d, Target: d, ReadOnly: true})
		}
	}
	for _, e := range etcBinds {
		add(Op{Kind: KindBind, Source: e, Target: e, ReadOnly: true, Optional: true})
	}
	if link, err := os.Readlink("/etc/localtime"); err == nil && strings.HasPrefix(link, "/usr/") {
		add(Op{Kind: KindSymlink, Source: link, Target: "/etc/localtime"})
	}
	for _, f := range syntheticEtc(host, o.HostNetwork, o.UID, o.GID) {
		add(Op{Kind: KindFile, Target: "/etc/" + f[0], Data: f[1]})
	}
	if o.HostNetwork || o.CACerts {
		add(Op{Kind: KindBind, Source: caCerts, Target: caCerts, ReadOnly: true, Optional: true})
	}

	// /proc: the sandbox's own pid namespace, never the host's.
	add(Op{Kind: KindProc, Target: "/proc", NoExec: true})
	for _, c := range procCovers {
		add(Op{Kind: KindCover, Target: c, ReadOnly: true, NoExec: true, Optional: true})
	}
	for _, m := range procMasks {
		add(Op{Kind: KindMask, Target: m, ReadOnly: true, NoExec: true})
	}

	// /dev: a tiny tmpfs with the harmless host nodes bound in.
	add(Op{Kind: KindTmpfs, Target: "/dev", Options: "size=64k,nr_inodes=64,mode=0755", NoExec: true})
	for _, n := range devNodes {
		add(devBind("/dev/"+n, "/dev/"+n))
	}
	if o.Console != "" {
		add(devBind(o.Console, "/dev/console"))
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}} {
		add(Op{Kind: KindSymlink, Source: l[1], Target: "/dev/" + l[0]})
	}
	// Populated, /dev goes read-only (its nodes stay usable: a read-only
	// mount does not stop writes to a device); /dev/shm, mounted after,
	// is the one writable place in it. python's multiprocessing needs it.
	// So are /dev/pts, a private devpts (ptys for script, expect, pty
	// tests; never the host's), with /dev/ptmx its multiplexer.
	add(Op{Kind: KindDir, Target: "/dev/shm"})
	add(Op{Kind: KindDir, Target: "/dev/pts"})
	add(Op{Kind: KindDir, Target: "/dev/mqueue"})
	add(Op{Kind: KindSymlink, Source: "pts/ptmx", Target: "/dev/ptmx"})
	add(Op{Kind: KindCover, Target: "/dev", ReadOnly: true, NoExec: true, KeepDevices: true})
	add(Op{Kind: KindTmpfs, Target: "/dev/shm", Options: tmpfsOpts(size, "1777"), NoExec: true})
	add(Op{Kind: KindDevpts, Target: "/dev/pts", Options: "ptmxmode=0666,mode=0620", NoExec: true, KeepDevices: true})
	add(Op{Kind: KindMqueue, Target: "/dev/mqueue", NoExec: true, Optional: true})

	add(Op{Kind: KindTmpfs, Target: "/tmp", Options: tmpfsOpts(size, "1777")})
	if o.Workspace != "" {
		add(Op{Kind: KindBind, Source: o.Workspace, Target: "/workspace"})
	} else {
		ws := o.WorkspaceSize
		if ws <= 0 {
			ws = size
		}
		add(Op{Kind: KindTmpfs, Target: "/workspace", Options: tmpfsOpts(ws, "0755")})
	}
	p.Ops = append(p.Ops, o.Extra...)
	return p, p.Validate()
}

// devBind binds the host character device source at target: usable
// (no nodev), so noexec instead.
func devBind(source, target string) Op {
	return Op{Kind: KindBind, Source: source, Target: target, CharDevice: true, KeepDevices: true, NoExec: true}
}

// TmpfsOptions returns the options of a writable tmpfs of size bytes.
func TmpfsOptions(size int64) string { return tmpfsOpts(size, "0755") }

// tmpfsOpts bounds both bytes and inodes: tmpfs pages and inodes live in
// kernel memory that rlimits do not count.
func tmpfsOpts(size int64, mode string) string {
	return fmt.Sprintf("size=%d,nr_inodes=65536,mode=%s", size, mode)
}

// syntheticEtc returns the generated /etc files, name and contents, in a
// fixed order so that equal options give equal plans. On the host's
// network, hosts and resolv.conf are copies of the host's (a resolv.conf
// the host lacks, or one over maxEtcCopy, is left out: the resolver then
// asks 127.0.0.1, as it would on the host).
func syntheticEtc(host string, hostNet bool, uid, gid int) [][2]string {
	hosts := "127.0.0.1\tlocalhost " + host + "\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	nss := "passwd: files\ngroup: files\nhosts: files\n"
	var resolv string
	if hostNet {
		hosts = hostEtc("/etc/hosts", hosts)
		resolv = hostEtc("/etc/resolv.conf", "")
		nss = "passwd: files\ngroup: files\nhosts: files dns\n"
	}
	passwd, group := "root:x:0:0:root:/workspace:/bin/sh\n", "root:x:0:\n"
	if uid == 0 {
		passwd = "root:x:0:" + strconv.Itoa(gid) + ":root:/workspace:/bin/sh\n"
	} else {
		passwd += "sandbox:x:" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid) + ":sandbox:/workspace:/bin/sh\n"
	}
	if gid != 0 {
		group += "sandbox:x:" + strconv.Itoa(gid) + ":\n"
	}
	files := [][2]string{
		{"passwd", passwd + "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
		{"group", group + "nogroup:x:65534:\n"},
		{"hosts", hosts},
		{"hostname", host + "\n"},
		{"nsswitch.conf", nss},
	}
	if resolv != "" {
		files = append(files, [2]string{"resolv.conf", resolv})
	}
	return files
}

// hostEtc is the content of the host's file path, or def when it cannot
// be read or is larger than maxEtcCopy. Read through any symlink
// (systemd-resolved links resolv.conf into /run): the copy is a plain
// file inside.
func hostEtc(path, def string) string {
	f, err := os.Open(path)
	if err != nil {
		return def
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEtcCopy+1))
	if err != nil || len(b) > maxEtcCopy {
		return def
	}
	return string(b)
}

// Validate checks that every target is an absolute clean path, that the
// root, /proc and /dev are only built by the plan's own steps, that each
// step has what its kind needs, and that no mount has fewer attributes
// than its kind's (see Op.ReadOnly): only a devpts, a character-device
// bind and a cover may keep devices; the device binds, procfs, devpts,
// covers and masks are noexec; covers and masks read-only.
func (p Plan) Validate() error {
	for i, op := range p.Ops {
		if !path.IsAbs(op.Target) || path.Clean(op.Target) != op.Target || op.Target == "/" {
			return fmt.Errorf("rootfs: op %d: target %q must be an absolute, clean path below /", i, op.Target)
		}
		devBind := op.Kind == KindBind && op.CharDevice
		devices := devBind || op.Kind == KindDevpts || op.Kind == KindCover
		noexec := devBind || op.Kind == KindDevpts || op.Kind == KindMqueue || op.Kind == KindCover || op.Kind == KindProc || op.Kind == KindMask
		readOnly := op.Kind == KindCover || op.Kind == KindMask
		switch {
		case op.KeepDevices && !devices, noexec && !op.NoExec, readOnly && !op.ReadOnly:
			return fmt.Errorf("rootfs: op %d: %s %s: mount attributes (read-only %v, noexec %v, keep devices %v) unlike its kind's", i, op.Kind, op.Target, op.ReadOnly, op.NoExec, op.KeepDevices)
		case op.Optional && op.Kind != KindBind && op.Kind != KindCover && op.Kind != KindMqueue:
			return fmt.Errorf("rootfs: op %d: %s %s cannot be optional", i, op.Kind, op.Target)
		}
		switch op.Kind {
		case KindBind:
			if !path.IsAbs(op.Source) {
				return fmt.Errorf("rootfs: op %d: bind source %q must be absolute", i, op.Source)
			}
		case KindSymlink:
			if op.Source == "" {
				return fmt.Errorf("rootfs: op %d: symlink %s has no target", i, op.Target)
			}
		case KindTmpfs, KindProc, KindDevpts, KindMqueue, KindCover, KindMask, KindDir, KindFile:
		default:
			return fmt.Errorf("rootfs: op %d: unknown kind %q", i, op.Kind)
		}
	}
	return nil
}
