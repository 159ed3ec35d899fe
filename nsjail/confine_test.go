package nsjail_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/rootfs"
	"golang.org/x/sys/unix"
)

// Every namespace the sandbox must have of its own differs from the
// host's (B04: pid; G01: net; ...).
func TestNamespacesAreNew(t *testing.T) {
	out := testutil.Sh(t, `for n in user pid net mnt ipc uts cgroup; do echo $n $(readlink /proc/self/ns/$n); done`, nil)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, inside, _ := strings.Cut(line, " ")
		host, err := os.Readlink("/proc/self/ns/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if inside == "" || inside == host {
			t.Errorf("%s namespace inside is %q, host %q: not a new namespace", name, inside, host)
		}
	}
	if n := strings.Count(out, "\n"); n != 7 {
		t.Fatalf("want 7 namespaces, got output %q", out)
	}
}

// B04: only the sandbox's own processes are visible: pid 1 is the
// reaper (the spawn helper's, or this binary's own), the program its
// child. (pid 1's command line without its mask's deferred limits, which
// vary with the host's: spawn.c's parseMask.)
func TestPidNamespaceHidesHost(t *testing.T) {
	out := testutil.Sh(t, `tr '\0' '\n' </proc/1/cmdline | sed '2s/,.*//' | tr '\n' ' '; echo; echo $PPID; ls /proc | grep -E '^[0-9]+$' | wc -l`, nil)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want, ppid := "airlock-reaper 0 4 0 /bin/sh /bin/sh -c", "1"
	if len(lines) != 3 || !strings.HasPrefix(lines[0], want) || lines[1] != ppid {
		t.Errorf("pid 1 and the program's parent are %q, want %q and %s", lines, want, ppid)
	}
	// sh and the pipeline's cat/ls/grep/wc: a handful, never the host's.
	n, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
	if err != nil || n < 1 || n > 8 {
		t.Errorf("%q pids visible inside, want only the sandbox's few", lines[len(lines)-1])
	}
}

// G01/G06: the network namespace holds only lo, which is up, and a
// listener on the host's loopback is unreachable.
func TestNetworkIsolated(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`
import socket
ifs = sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:])
print('ifs', ','.join(ifs))
try:
    socket.create_connection(('127.0.0.1', %d), 2); print('host reached')
except OSError as e:
    print('host unreachable', e.errno)
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), 2); print('lo up')
`, port)
	res := testutil.Run(t, []string{"python3", "-c", script}, nil)
	if res.Status != nsjail.StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Stderr)
	}
	for _, want := range []string{"ifs lo\n", "host unreachable", "lo up"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("output %q lacks %q", res.Stdout, want)
		}
	}
	select {
	case <-accepted:
		t.Fatal("the host listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
}

// A10/E04: the mount table holds exactly the planned mounts: the root, and
// the target of every bind, tmpfs, proc, devpts, mqueue, cover and mask of
// the plan.
func TestMountTableIsThePlan(t *testing.T) {
	out := testutil.Sh(t, `cut -d' ' -f5 /proc/self/mountinfo`, nil)
	got := strings.Fields(out)
	plan, err := rootfs.Default(rootfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]bool{"/": true}
	var required []string
	for _, op := range plan.Ops {
		switch op.Kind {
		case rootfs.KindBind, rootfs.KindTmpfs, rootfs.KindProc, rootfs.KindDevpts, rootfs.KindMqueue, rootfs.KindCover:
			planned[op.Target] = true
			if !op.Optional {
				required = append(required, op.Target)
			}
		case rootfs.KindMask:
			// A mask is a mount where its /proc entry exists.
			planned[op.Target] = true
			if _, err := os.Stat(op.Target); err == nil {
				required = append(required, op.Target)
			}
		}
	}
	for _, m := range got {
		if !planned[m] {
			t.Errorf("unplanned mount %s inside", m)
		}
	}
	for _, m := range required {
		if !slices.Contains(got, m) {
			t.Errorf("planned mount %s missing", m)
		}
	}
	if strings.Contains(out, "oldroot") || slices.Contains(got, "/tmp/proc") {
		t.Errorf("old root still attached: %v", got)
	}
}

// A10/E04: every mount of the sandbox has exactly its golden flags (ro or
// rw, nosuid, nodev, noexec) and filesystem type: the default plan, and
// a policy's read-only bind, writable bind and tmpfs. A row with a when
// path is expected only where the host has that path (optional binds,
// covers and masks of /proc entries the kernel may lack); a bind row
// (src) has the host filesystem of its source, and also every flag of
// the host mount it clones (mount_setattr only adds flags). The /dev
// nodes appear twice: bound under the /dev tmpfs, and again in the
// read-only cover of /dev, which keeps them usable (no nodev).
func TestMountAttributes(t *testing.T) {
	type row struct{ target, fstype, flags, src, when string }
	bind := func(target, flags string) row { return row{target, "", flags, target, target} }
	golden := []row{
		{"/", "tmpfs", "ro,nosuid,nodev", "", ""},
		bind("/usr", "ro,nosuid,nodev"),
		bind("/etc/ld.so.cache", "ro,nosuid,nodev"),
		bind("/etc/alternatives", "ro,nosuid,nodev"),
		bind("/etc/services", "ro,nosuid,nodev"),
		bind("/etc/protocols", "ro,nosuid,nodev"),
		bind("/etc/locale.alias", "ro,nosuid,nodev"),
		{"/proc", "proc", "rw,nosuid,nodev,noexec", "", ""},
		{"/dev", "tmpfs", "rw,nosuid,nodev,noexec", "", ""},
		{"/dev", "tmpfs", "ro,nosuid,nodev,noexec", "", ""},
		{"/dev/shm", "tmpfs", "rw,nosuid,nodev,noexec", "", ""},
		{"/dev/pts", "devpts", "rw,nosuid,noexec", "", ""},
		{"/dev/mqueue", "mqueue", "rw,nosuid,nodev,noexec", "", ""},
		{"/tmp", "tmpfs", "rw,nosuid,nodev", "", ""},
		{"/workspace", "tmpfs", "rw,nosuid,nodev", "", ""},
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			golden = append(golden, bind(d, "ro,nosuid,nodev"))
		}
	}
	for _, c := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"} {
		golden = append(golden, row{c, "proc", "ro,nosuid,nodev,noexec", "", c})
	}
	for _, m := range []string{"/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/timer_list",
		"/proc/sched_debug", "/proc/latency_stats", "/proc/acpi", "/proc/asound", "/proc/scsi"} {
		golden = append(golden, row{m, "tmpfs", "ro,nosuid,nodev,noexec", "", m})
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		golden = append(golden, bind("/dev/"+n, "rw,nosuid,noexec"), bind("/dev/"+n, "ro,nosuid,noexec"))
	}
	dir := testutil.WorldReadableDir(t)
	user := append(slices.Clone(golden),
		row{"/data/ro", "", "ro,nosuid,nodev", dir, ""},
		row{"/data/rw", "", "rw,nosuid,nodev", dir, ""},
		row{"/scratch", "tmpfs", "rw,nosuid,nodev", "", ""})
	host := parseMountinfo(t, readFile(t, "/proc/self/mountinfo"))
	for _, c := range []struct {
		name   string
		golden []row
		mounts []policy.Mount
	}{
		{"default", golden, nil},
		{"user mounts", user, []policy.Mount{
			{Type: policy.MountROBind, Source: dir, Target: "/data/ro"},
			{Type: policy.MountBind, Source: dir, Target: "/data/rw"},
			{Type: policy.MountTmpfs, Target: "/scratch"},
		}},
	} {
		var want []string
		for _, r := range c.golden {
			if r.when != "" && !testutil.Exists(r.when) {
				continue
			}
			if r.src != "" {
				m := hostMountOf(host, r.src)
				r.fstype, r.flags = m[1], unionFlags(r.flags, m[2])
			}
			want = append(want, r.target+" "+r.fstype+" "+r.flags)
		}
		var got []string
		for _, m := range parseMountinfo(t, testutil.Sh(t, `cat /proc/self/mountinfo`, func(p *policy.Policy) { p.Mounts = c.mounts })) {
			got = append(got, m[0]+" "+m[1]+" "+m[2])
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: mounts (target, type, flags) are\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// parseMountinfo returns each mount's target, filesystem type and flags
// (ro or rw, nosuid, nodev, noexec: those a sandbox enforces), in order.
func parseMountinfo(t *testing.T, mi string) [][3]string {
	t.Helper()
	var mounts [][3]string
	for _, l := range strings.Split(strings.TrimSpace(mi), "\n") {
		f := strings.Fields(l)
		sep := slices.Index(f, "-")
		if len(f) < 6 || sep < 6 || sep+1 >= len(f) {
			t.Fatalf("mountinfo line %q", l)
		}
		mounts = append(mounts, [3]string{f[4], f[sep+1], unionFlags("", f[5])})
	}
	return mounts
}

// unionFlags is the canonical form of the flags of a and b together.
func unionFlags(a, b string) string {
	set := strings.Split(a+","+b, ",")
	out := "rw"
	if slices.Contains(set, "ro") {
		out = "ro"
	}
	for _, f := range []string{"nosuid", "nodev", "noexec"} {
		if slices.Contains(set, f) {
			out += "," + f
		}
	}
	return out
}

// hostMountOf is the host mount that holds path p (the deepest, and of
// those stacked, the last).
func hostMountOf(host [][3]string, p string) [3]string {
	var best [3]string
	for _, m := range host {
		if (m[0] == "/" || p == m[0] || strings.HasPrefix(p, m[0]+"/")) && len(m[0]) >= len(best[0]) {
			best = m
		}
	}
	return best
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// B09, D01, D02: identity, capabilities and no_new_privs of the program:
// by default uid and gid 1000 inside, the one id each map holds; with a
// policy's uid 0, root inside, still without a capability.
func TestIdentityAndPrivileges(t *testing.T) {
	for _, inside := range []int{1000, 0} {
		t.Run(fmt.Sprint(inside), func(t *testing.T) { identity(t, inside) })
	}
}

func identity(t *testing.T, inside int) {
	out := testutil.Sh(t, `cat /proc/self/uid_map /proc/self/gid_map; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status; id -u; id -g`, func(p *policy.Policy) {
		if inside == 0 {
			p.UID, p.GID = new(int), new(int)
		}
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 10 || lines[8] != fmt.Sprint(inside) || lines[9] != fmt.Sprint(inside) {
		t.Fatalf("want 2 map lines, 6 status lines and the ids %d, got %q", inside, out)
	}
	lines = lines[:8]
	for _, m := range lines[:2] {
		f := strings.Fields(m)
		if len(f) != 3 || f[0] != fmt.Sprint(inside) || f[2] != "1" {
			t.Fatalf("id map %q: want a single id mapped to %d", m, inside)
		}
		want := fmt.Sprint(os.Getuid())
		if os.Getuid() == 0 {
			if f[1] == "0" {
				t.Fatalf("sandbox root maps to host root: %q", m)
			}
			want = "65534"
		}
		if m == lines[0] && f[1] != want {
			t.Errorf("uid map %q: want host id %s", m, want)
		}
	}
	for _, l := range lines[2:] {
		k, v, _ := strings.Cut(l, ":")
		v = strings.TrimSpace(v)
		switch {
		case k == "NoNewPrivs" && v != "1":
			t.Errorf("NoNewPrivs = %s", v)
		case strings.HasPrefix(k, "Cap") && v != "0000000000000000":
			t.Errorf("%s = %s, want 0", k, v)
		}
	}
}

// A01/L04: only fds 0-2 reach the program, even when the supervisor holds
// fds without close-on-exec (as cgo code or a systemd parent leaves them).
func TestOnlyStdioFdsInside(t *testing.T) {
	for _, p := range []string{"/etc/hostname", "/"} {
		fd, err := unix.Open(p, unix.O_RDONLY, 0) // no O_CLOEXEC on purpose
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
	}
	// sh is the program: list its fds from a child. Pid 1's are not the
	// program's to see (it is not dumpable).
	out := testutil.Sh(t, `ls /proc/$$/fd; readlink /proc/1/fd/0 >/dev/null 2>&1 && echo pid-1-fds; :`, nil)
	if got := strings.Fields(out); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("program fds (and pid 1's, if readable) %v, want [0 1 2]", got)
	}
}

// A12/F06: read-only means read-only recursively, submounts included;
// /workspace and /tmp are writable.
func TestReadOnlyAndWritable(t *testing.T) {
	name := fmt.Sprintf("airlock-ro-probe-%d", time.Now().UnixNano())
	defer os.Remove("/dev/shm/" + name)
	// /dev/shm is a world-writable submount of /dev on the host: bound
	// read-only with /dev, it must refuse writes too.
	script := fmt.Sprintf(`
for p in /usr/x /etc/x /x /bin/x /lib/x /proc/sys/kernel/hostname /mnt/hostdev/shm/%s; do
  if (echo x > $p) 2>/dev/null; then echo "WROTE $p"; else echo "$p: $( (echo x > $p) 2>&1 | grep -o 'Read-only file system')"; fi
done
echo a > /workspace/a && echo b > /tmp/b && echo c > /dev/shm/c && cat /workspace/a /tmp/b /dev/shm/c`, name)
	res := testutil.Run(t, []string{"/bin/sh", "-c", script}, func(p *policy.Policy) {
		p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: "/dev", Target: "/mnt/hostdev"}}
	})
	lines := strings.Split(res.Stdout, "\n")
	if len(lines) < 10 {
		t.Fatalf("short output %q (stderr %q)", res.Stdout, res.Stderr)
	}
	for _, l := range lines[:7] {
		if !strings.HasSuffix(l, ": Read-only file system") {
			t.Errorf("want EROFS: %q", l)
		}
	}
	if strings.Join(lines[7:], "\n") != "a\nb\nc\n" {
		t.Errorf("/workspace, /tmp or /dev/shm not writable: %q %q", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat("/dev/shm/" + name); err == nil {
		t.Fatal("the sandbox created a file in the host's /dev/shm")
	}
}

// F07: a host directory that is not bound is invisible, and a bound one
// is visible only where it was bound.
func TestUnboundHostDirInvisible(t *testing.T) {
	dir := testutil.WorldReadableDir(t)
	canary := filepath.Join(dir, "airlock-canary-file")
	if err := os.WriteFile(canary, []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`cat %s 2>&1; ls %s 2>&1; find / -path /usr -prune -o -path /proc -prune -o -name airlock-canary-file -print 2>/dev/null; cat /shown/airlock-canary-file`, canary, dir)
	res := testutil.Run(t, []string{"/bin/sh", "-c", script}, nil)
	if strings.Contains(res.Stdout, "canary\n") || strings.Count(res.Stdout, "No such file") != 2 {
		t.Errorf("unbound host dir reachable:\n%s", res.Stdout)
	}
	res = testutil.Run(t, []string{"/bin/sh", "-c", script}, func(p *policy.Policy) {
		p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: dir, Target: "/shown"}}
	})
	if !strings.HasSuffix(res.Stdout, "/shown/airlock-canary-file\ncanary") {
		t.Errorf("bound dir not visible at its target only:\n%s", res.Stdout)
	}
}

// K01: the supervisor's environment never reaches the program.
func TestSecretEnvNotInherited(t *testing.T) {
	t.Setenv("AIRLOCK_CANARY_SECRET", "s3cr3t-canary-value")
	res := testutil.Run(t, []string{"/usr/bin/env"}, func(p *policy.Policy) {
		p.Setenv = map[string]string{"GIVEN": "yes"}
	})
	got := strings.Fields(res.Stdout)
	want := []string{"GIVEN=yes", "HOME=/workspace", "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("environment inside = %v, want exactly %v", got, want)
	}
	out := testutil.Sh(t, `cat /proc/self/environ; cat /proc/1/environ 2>/dev/null; :`, nil)
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "_AIRLOCK_INIT") {
		t.Fatalf("supervisor or init environment leaked: %q", out)
	}
}

// A09: a mount target below a writable host directory that holds a
// symlink is refused, never followed out of the sandbox.
func TestSymlinkedMountTargetRefused(t *testing.T) {
	ws := testutil.WorldReadableDir(t)
	if err := os.Symlink("/etc", filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	res, err := testutil.RunErr(t, []string{"/bin/true"}, func(p *policy.Policy) {
		p.Workspace = ws
		p.Mounts = []policy.Mount{{Type: policy.MountTmpfs, Target: "/workspace/sub/x"}}
	})
	var se *policy.SetupError
	if !errors.As(err, &se) || res == nil || res.Status != nsjail.StatusSetupError {
		t.Fatalf("want a setup_error, got %v, %+v", err, res)
	}
	if !strings.Contains(err.Error(), "symlink") {
		t.Errorf("error does not name the symlink: %v", err)
	}
}

func TestExitStatusClassified(t *testing.T) {
	res := testutil.Run(t, []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, nil)
	if res.Status != nsjail.StatusExited || res.ExitCode != 3 || res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Fatalf("got %+v", res)
	}
	res, err := testutil.RunErr(t, []string{"no-such-program-xyz"}, nil)
	if !errors.Is(err, unix.ENOENT) || !errors.Is(err, policy.ErrInvalid) || res.Status != nsjail.StatusSetupError || res.ExitCode != 127 ||
		res.Error == nil || res.Error.Stage != "exec" || res.Error.Class != policy.ClassInvalid || res.Error.Field != "args" ||
		!strings.Contains(res.Error.Message, "no-such-program-xyz") {
		t.Fatalf("missing program: %v %+v %+v", err, res, res.Error)
	}
}

func TestInvalidRequestsAreErrInvalid(t *testing.T) {
	for name, mod := range map[string]func(*policy.Policy){
		"relative target": func(p *policy.Policy) { p.Mounts = []policy.Mount{{Type: policy.MountTmpfs, Target: "x"}} },
		"proc target":     func(p *policy.Policy) { p.Mounts = []policy.Mount{{Type: policy.MountTmpfs, Target: "/proc/x"}} },
		"missing source": func(p *policy.Policy) {
			p.Mounts = []policy.Mount{{Type: policy.MountBind, Source: "/nonexistent-xyz", Target: "/x"}}
		},
		"bad net": func(p *policy.Policy) { p.Net = "bridge" },
	} {
		_, err := testutil.RunErr(t, []string{"/bin/true"}, mod)
		if !errors.Is(err, policy.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	ex, _ := executor.New(executor.Config{})
	if _, err := ex.Execute(t.Context(), executor.Request{}); !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("no program: got %v", err)
	}
}
