//go:build linux

package cgroups

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/airlock-sandbox/airlock/policy"
	cg "github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// v1Controllers are the v1 hierarchies a run's group lives in: limits
// (memory, cpu, pids), CPU accounting (cpuacct), and freezing for kill.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids", "freezer"}

// v2Controllers must be enabled for a v2 parent's children.
var v2Controllers = []string{"memory", "cpu", "pids"}

// Parent is where per-run cgroups are made: a writable, delegated place
// under this process's own cgroup (or a configured one).
type Parent struct {
	backend string
	v1      map[string]string // controller -> parent directory
	v2      string            // parent directory
}

// Backend is "cgroup1" or "cgroup2".
func (p *Parent) Backend() string { return p.backend }

// Dir is the parent directory (for v1, the memory hierarchy's).
func (p *Parent) Dir() string {
	if p.backend == "cgroup2" {
		return p.v2
	}
	return p.v1["memory"]
}

// Find discovers where this process may make per-run cgroups and makes
// it ready. configured is a cgroup path (as in /proc/self/cgroup, e.g.
// "/my.slice/airlock") to use instead of this process's own cgroup; "" =
// discover.
//
// On cgroup v2 the parent must be writable with the memory, cpu and pids
// controllers available; Find enables them for the parent's children
// (cgroup.subtree_control). The "no internal processes" rule forbids that
// while the parent itself holds processes, which is the case of a
// process's own cgroup: with moveSelf, and only when discovering (never
// into or out of a configured parent), Find then moves this whole process
// into a leaf, <own>/airlock-supervisor, and makes the per-run groups
// beside it. Without moveSelf it moves nothing and that cgroup is
// unusable (the error says the ways out). A process already in a leaf of
// that name, put there by whoever started it, makes its groups beside it
// with no move. On cgroup v1 the parent is this process's own cgroup in
// each of the memory, cpu, cpuacct, pids and freezer hierarchies (or the
// configured path in each), which in practice needs root; nothing is
// written.
//
// The error, when no cgroup can be used, is an *policy.UnsupportedError
// naming the fix. Find keeps no state: each call looks again.
func Find(configured string, moveSelf bool) (*Parent, error) {
	return find(configured, moveSelf, true)
}

// Inspect is Find without its side effects: it writes nothing (no
// controllers enabled, no move) and returns the parent Find would return,
// or Find's error, as far as reading the cgroup files can tell.
func Inspect(configured string, moveSelf bool) (*Parent, error) {
	return find(configured, moveSelf, false)
}

func find(configured string, moveSelf, apply bool) (*Parent, error) {
	switch HostMode() {
	case Unified:
		return findV2("/sys/fs/cgroup", configured, moveSelf, apply)
	case Hybrid, Legacy:
		return findV1(configured)
	}
	return nil, unsupported("no cgroup filesystem is mounted", "mount cgroup2 at /sys/fs/cgroup")
}

func unsupported(reason, fix string) error {
	return &policy.UnsupportedError{Control: "cgroup limits", Check: policy.CheckCgroup, Reason: reason, Fix: fix}
}

const rootlessFix = "run as root, or on a cgroup v2 host inside a delegated cgroup (systemd-run --user --scope -p Delegate=yes airlock ...)"

// busyFix is the way out of an own cgroup that holds processes.
const busyFix = "start this process in a leaf named " + supervisorLeaf + " of its delegated cgroup, or configure a cgroup parent that holds no processes, or let it move itself there (executor.Config.CgroupMoveSelf; the airlock CLI does)"

func findV2(mount, configured string, moveSelf, apply bool) (*Parent, error) {
	rel := configured
	if rel == "" {
		_, own, err := cg.ParseCgroupFileUnified("/proc/self/cgroup")
		if err != nil {
			return nil, unsupported("cannot read /proc/self/cgroup: "+err.Error(), "")
		}
		rel = own
		// A supervisor already in its leaf (moved by Find, or started
		// there) makes its groups beside the leaf.
		if filepath.Base(rel) == supervisorLeaf {
			rel = filepath.Dir(rel)
		}
	}
	dir := filepath.Join(mount, filepath.Clean("/"+rel))
	if unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil || unix.Access(filepath.Join(dir, "cgroup.subtree_control"), unix.W_OK) != nil {
		return nil, unsupported(fmt.Sprintf("cgroup v2: %s is not writable by uid %d (not delegated)", dir, os.Geteuid()), rootlessFix)
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, unsupported("cgroup v2: "+err.Error(), "")
	}
	for _, c := range v2Controllers {
		if !strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " "+c+" ") {
			return nil, unsupported(fmt.Sprintf("cgroup v2: controller %s is not available in %s (available: %s)", c, dir, strings.TrimSpace(string(avail))),
				"delegate memory, cpu and pids to this cgroup (systemd: Delegate=memory cpu pids)")
		}
	}
	// Enabling controllers for children is refused (EBUSY) while the
	// parent holds processes, except at the root.
	busy := dir != mount && holdsProcesses(dir)
	canMove := moveSelf && configured == "" && dir != mount
	if !apply {
		if busy && len(missingControllers(dir)) > 0 && !canMove {
			return nil, busyError(dir)
		}
		return &Parent{backend: "cgroup2", v2: dir}, nil
	}
	err = enableControllers(dir)
	if errors.Is(err, unix.EBUSY) && canMove {
		// Processes in our own cgroup, and the caller allows the move:
		// into a leaf, then the controllers can be enabled for the
		// per-run siblings.
		leaf := filepath.Join(dir, supervisorLeaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, unsupported("cgroup v2: "+err.Error(), "")
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			return nil, unsupported("cgroup v2: moving the supervisor into "+leaf+": "+err.Error(), "")
		}
		err = enableControllers(dir)
	}
	if errors.Is(err, unix.EBUSY) {
		return nil, busyError(dir)
	}
	if err != nil {
		return nil, unsupported(fmt.Sprintf("cgroup v2: enabling %v in %s: %v", v2Controllers, dir, err),
			"run airlock alone in its delegated cgroup (no other processes there)")
	}
	return &Parent{backend: "cgroup2", v2: dir}, nil
}

func busyError(dir string) error {
	return unsupported(fmt.Sprintf("cgroup v2: %s holds processes, so its children cannot get the %v controllers", dir, v2Controllers), busyFix)
}

// holdsProcesses reports whether a v2 cgroup has processes of its own.
func holdsProcesses(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err != nil || len(strings.TrimSpace(string(b))) > 0
}

// supervisorLeaf is where a supervisor moves itself on cgroup v2.
const supervisorLeaf = "airlock-supervisor"

// missingControllers are the v2Controllers not yet enabled for dir's
// children.
func missingControllers(dir string) []string {
	cur, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	var add []string
	for _, c := range v2Controllers {
		if !strings.Contains(" "+strings.TrimSpace(string(cur))+" ", " "+c+" ") {
			add = append(add, "+"+c)
		}
	}
	return add
}

func enableControllers(dir string) error {
	add := missingControllers(dir)
	if len(add) == 0 {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(add, " "))
}

func findV1(configured string) (*Parent, error) {
	mounts, err := v1Mounts()
	if err != nil {
		return nil, unsupported("cgroup v1: "+err.Error(), "")
	}
	own, err := v1OwnPaths()
	if err != nil {
		return nil, unsupported("cgroup v1: "+err.Error(), "")
	}
	p := &Parent{backend: "cgroup1", v1: map[string]string{}}
	for _, c := range v1Controllers {
		m, ok := mounts[c]
		if !ok {
			return nil, unsupported("cgroup v1: the "+c+" controller is not mounted", "mount the "+c+" cgroup controller")
		}
		rel := own[c]
		if configured != "" {
			rel = configured
		}
		dir := filepath.Join(m, filepath.Clean("/"+rel))
		if unix.Access(dir, unix.W_OK) != nil {
			return nil, unsupported(fmt.Sprintf("cgroup v1 host: %s is not writable by uid %d, and v1 has no delegation", dir, os.Geteuid()), rootlessFix)
		}
		p.v1[c] = dir
	}
	return p, nil
}

// v1Mounts maps each v1 controller to its hierarchy's mount point.
func v1Mounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(tail[2], ",") {
			for _, c := range v1Controllers {
				if opt == c {
					out[c] = fields[4]
				}
			}
		}
	}
	return out, sc.Err()
}

// v1OwnPaths maps each v1 controller to this process's cgroup path.
func v1OwnPaths() (map[string]string, error) {
	paths, _, err := cg.ParseCgroupFileUnified("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range paths {
		for _, c := range strings.Split(k, ",") {
			out[c] = v
		}
	}
	return out, nil
}

// New makes a run's cgroup with limits. Its name carries this process's
// pid and start time, so a later supervisor can tell a stale one
// (ReapStale), and a random part, so names cannot be guessed; it is made
// with an exclusive mkdir.
func (p *Parent) New(lim Limits) (Group, error) {
	name, err := groupName()
	if err != nil {
		return nil, err
	}
	if p.backend == "cgroup2" {
		return newV2(filepath.Join(p.v2, name), lim)
	}
	dirs := map[string]string{}
	for c, parent := range p.v1 {
		dirs[c] = filepath.Join(parent, name)
	}
	return newV1(dirs, lim)
}

const namePrefix = "airlock-"

// groupName names a run's group after its supervisor: pid, start time
// and pid namespace (which the pid means something in), then random
// bytes: "airlock-PID-START-PIDNS-RAND".
func groupName() (string, error) {
	id, err := self()
	if err != nil {
		return "", err
	}
	r := make([]byte, 8)
	rand.Read(r)
	return fmt.Sprintf("%s%d-%d-%d-%s", namePrefix, id.pid, id.start, id.ns, hex.EncodeToString(r)), nil
}

// self is this process's identity in group names, read once: it does not
// change while the process lives, and every run's group is named by it.
var self = sync.OnceValues(func() (identity, error) {
	id := identity{pid: os.Getpid()}
	var err error
	if id.start, err = startTime(id.pid); err != nil {
		return id, err
	}
	id.ns, err = pidNS()
	return id, err
})

type identity struct {
	pid       int
	start, ns uint64
}

// startTime is field 22 of /proc/PID/stat: the process's start time.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The comm field may hold spaces: split after its closing paren.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// pidNS is the inode of this process's pid namespace.
func pidNS() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// stale reports whether a group name belongs to a supervisor that is
// gone. It fails closed: reaping kills every process in the group, so a
// group is stale only when its supervisor provably is not running: its
// name is of this pid namespace, and its pid either does not exist
// (ENOENT) or is another process (another start time). Any other
// failure to read it (fds exhausted, a procfs of another namespace or
// with hidepid, a transient error) keeps the group: a live supervisor's
// sandboxes were killed that way.
func stale(name string) bool {
	id, err := self()
	if err != nil {
		return false
	}
	return staleIn(name, id.ns, startTime)
}

func staleIn(name string, ownNS uint64, startOf func(int) (uint64, error)) bool {
	var pid int
	var start, ns uint64
	var rest string
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, namePrefix), "%d-%d-%d-%s", &pid, &start, &ns, &rest); err != nil {
		return false // not ours, or of an older naming
	}
	if ns != ownNS || pid <= 0 {
		return false // a pid of another namespace says nothing here
	}
	cur, err := startOf(pid)
	if err != nil {
		return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH)
	}
	return cur != start
}

// ReapStale kills and removes the groups of supervisors that died without
// cleaning up (for example SIGKILLed mid-run). It returns how many.
//
// On v1 each controller's parent is listed: they differ when this
// process's controllers sit at different paths (pids at the root, memory
// in a service's group), and a group whose memory part is gone, or that
// an earlier supervisor made under another memory parent, may still have
// its part here.
func (p *Parent) ReapStale() (int, error) {
	dirs := []string{p.v2}
	if p.backend != "cgroup2" {
		dirs = dirs[:0]
		for _, d := range p.v1 {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		slices.Sort(dirs)
	}
	var names []string
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			if e.IsDir() && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	n := 0
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, namePrefix) || name == supervisorLeaf || !stale(name) {
			continue
		}
		var g Group
		if p.backend == "cgroup2" {
			g = &v2Group{dir: filepath.Join(p.v2, name)}
		} else {
			dirs := map[string]string{}
			for c, parent := range p.v1 {
				dirs[c] = filepath.Join(parent, name)
			}
			g = &v1Group{dirs: dirs}
		}
		if err := g.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
