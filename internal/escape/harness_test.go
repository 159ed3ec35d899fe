package escape_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/hostprobe"
	"golang.org/x/sys/unix"
)

// suite holds the executor and the host canaries every probe is judged
// against.
type suite struct {
	ex *executor.Executor

	canaryDir, canaryFile string // host dir and file with a secret
	canarySecret          string // its content
	canaryHash            string
	binPath, binHash      string // the supervisor binary (A03)

	tcp     net.Listener // 127.0.0.1 listener that must never accept
	tcpHits atomic.Int64
	abs     net.Listener // abstract unix socket that must never accept
	absName string
	absHits atomic.Int64

	hostname string
	uid      int // host uid the sandbox runs as
	count    atomic.Int64

	// landlock is the Landlock ABI every run must record: the jail's
	// second layer wherever the host probe finds Landlock (0: none).
	landlock int
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	// The CLI's sandbox: pid 1 is the reaper (the spawn helper).
	ex, err := executor.New(executor.Config{SpawnPath: testutil.RequireReaper(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	s := &suite{ex: ex, uid: os.Getuid(), canarySecret: "airlock-canary-" + randomHex(16)}
	if s.uid == 0 {
		s.uid = 65534
	}
	s.hostname, _ = os.Hostname()
	s.landlock = hostLandlock(t)
	s.canaryDir = testutil.WorldReadableDir(t)
	s.canaryFile = filepath.Join(s.canaryDir, "canary")
	// 8 KiB: more than one page, so a page-cache overwrite (M01) at
	// any offset but 0 would show in the hash.
	data := strings.Repeat(s.canarySecret+"\n", 8192/(len(s.canarySecret)+1)+1)
	if err := os.WriteFile(s.canaryFile, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	s.canaryHash = sha256File(t, s.canaryFile)
	if s.binPath, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	s.binHash = sha256File(t, s.binPath)

	if s.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	s.absName = "airlock-escape-canary-" + randomHex(8)
	if s.abs, err = net.Listen("unix", "@"+s.absName); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		ln   net.Listener
		hits *atomic.Int64
	}{{s.tcp, &s.tcpHits}, {s.abs, &s.absHits}} {
		go func() {
			for {
				c, err := l.ln.Accept()
				if err != nil {
					return
				}
				l.hits.Add(1)
				c.Close()
			}
		}()
	}
	t.Cleanup(func() { s.tcp.Close(); s.abs.Close() })
	return s
}

// hostLandlock is the Landlock ABI of the jail's second layer on this
// host, as policy/hostprobe finds it (capped at what airlock writes),
// checked against the kernel's own answer: a probe that lost Landlock
// would otherwise turn the runs' check off with it.
func hostLandlock(t *testing.T) int {
	t.Helper()
	abi := hostprobe.Probe(hostprobe.Options{NoCgroup: true}).LandlockABI()
	kernel := testutil.KernelLandlockABI()
	if want := min(kernel, policy.LandlockMax); abi != want {
		t.Fatalf("the host probe finds Landlock ABI %d, the kernel answers %d", abi, kernel)
	}
	if abi == 0 {
		t.Log("no Landlock on this host: the jail runs without its second layer")
	}
	return abi
}

// checkLandlock fails the probe unless its run had the jail's Landlock
// layer on, at the host's ABI.
func (p *probe) checkLandlock(res *nsjail.Result) {
	p.t.Helper()
	if res != nil && res.Enforced.Landlock != p.s.landlock {
		p.t.Errorf("%s: the run's Landlock ABI is %d, the host's %d: the jail's second layer is not on", p.id, res.Enforced.Landlock, p.s.landlock)
	}
}

func (s *suite) tcpPort() int { return s.tcp.Addr().(*net.TCPAddr).Port }

func sha256File(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// probe is one subtest: its runs, what they printed, and its verdict.
type probe struct {
	s       *suite
	t       *testing.T
	id      string
	marker  string   // unique argv word of every process the probe starts
	pidns   []string // pid namespaces its sandboxes reported
	ended   uint64   // boot-relative clock ticks when its last run ended
	outputs []string
	mu      sync.Mutex
	nothing string // why the probe proves nothing here
}

// obs is a probe's JSON observation.
type obs map[string]any

// str returns a value as text ("" when absent).
func (o obs) str(k string) string {
	v, ok := o[k]
	if !ok {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (o obs) strs(k string) []string {
	var out []string
	for _, v := range asList(o[k]) {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

func (o obs) dict(k string) map[string]any {
	m, _ := o[k].(map[string]any)
	return m
}

func asList(v any) []any { l, _ := v.([]any); return l }

// probeFunc attacks and judges; it calls t.Errorf for an unsafe outcome
// and p.provesNothing when this host cannot show anything.
type probeFunc func(p *probe)

// run runs one probe as a subtest with the host checks after it.
func (s *suite) run(t *testing.T, id string, f probeFunc) {
	t.Run(id, func(t *testing.T) {
		p := &probe{s: s, t: t, id: id, marker: fmt.Sprintf("airlock-escape-%d-%d", os.Getpid(), s.count.Add(1))}
		before := snapshot(t)
		f(p)
		s.checkHost(p, before)
		switch {
		case t.Failed():
			tally.add(id, "unsafe", "")
		case p.nothing != "":
			tally.add(id, "nothing", p.nothing)
			t.Skipf("proves nothing here: %s", p.nothing)
		default:
			tally.add(id, "safe", "")
		}
	})
}

// provesNothing records why the probe cannot show anything on this host.
func (p *probe) provesNothing(format string, args ...any) {
	p.nothing = fmt.Sprintf(format, args...)
}

// expect fails the probe unless o[key] is one of want.
func (p *probe) expect(o obs, key string, want ...string) {
	p.t.Helper()
	if v := o.str(key); !slices.Contains(want, v) {
		p.t.Errorf("%s: %s = %q, want one of %v", p.id, key, v, want)
	}
}

// probeFiles are embedded: CI runs the prebuilt test binary outside the
// package directory (rootless, and in the cgroup v2 guest).
//
//go:embed testdata/probes/*.py
var probeFiles embed.FS

// script is a probe file with the common prelude.
func script(t testing.TB, file string) string {
	t.Helper()
	pre, err := probeFiles.ReadFile("testdata/probes/prelude.py")
	if err != nil {
		t.Fatal(err)
	}
	body, err := probeFiles.ReadFile("testdata/probes/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return string(pre) + "\n" + string(body)
}

// request is a probe run: python3 running the probe file with the marker
// and extra as arguments, under the default policy changed by mod.
func (p *probe) request(file string, extra []string, mod func(*policy.Policy)) executor.Request {
	pol := policy.Default()
	pol.Timeout = policy.Duration(60 * time.Second)
	pol.Setenv = map[string]string{
		"ESCAPE_MARKER":   p.marker,
		"ESCAPE_PORT":     strconv.Itoa(p.s.tcpPort()),
		"ESCAPE_ABSTRACT": p.s.absName,
		"ESCAPE_HOSTPID":  strconv.Itoa(os.Getpid()),
	}
	if mod != nil {
		mod(&pol)
	}
	args := append([]string{"python3", "-I", "-c", script(p.t, file), p.marker}, extra...)
	return executor.Request{Args: args, Policy: pol}
}

// execute runs a request and records its output and end.
func (p *probe) execute(req executor.Request) (*executor.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := p.s.ex.Execute(ctx, req)
	p.checkLandlock(resultOf(res))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = uptimeTicks()
	if res != nil {
		p.outputs = append(p.outputs, res.Stdout, res.Stderr, res.Error.String())
		p.notePidns(res.Stdout)
	}
	if err != nil {
		p.outputs = append(p.outputs, err.Error())
	}
	return res, err
}

// notePidns records the pid namespace the prelude prints first.
func (p *probe) notePidns(out string) {
	first, _, _ := strings.Cut(out, "\n")
	var o obs
	if json.Unmarshal([]byte(first), &o) == nil && o.str("pidns") != "" {
		p.pidns = append(p.pidns, o.str("pidns"))
	}
}

// observe runs a probe file and returns its last JSON line; it fails
// the probe when the run has no trusted outcome or printed none.
func (p *probe) observe(file string, extra []string, mod func(*policy.Policy)) (obs, *nsjail.Result) {
	p.t.Helper()
	res, err := p.execute(p.request(file, extra, mod))
	if err != nil || res == nil {
		p.t.Fatalf("%s: run: %v", p.id, err)
	}
	o := lastJSON(res.Stdout)
	if o == nil {
		p.t.Fatalf("%s: no observation: status %s exit %d signal %q error %q (wall %d ms, cpu %d ms, memory peak %d KiB)\nstdout: %s\nstderr: %s",
			p.id, res.Status, res.ExitCode, res.Signal, res.Error, res.WallTimeMS, res.CPUTimeMS, res.MemoryPeakBytes>>10, res.Stdout, res.Stderr)
	}
	if res.Status != nsjail.StatusOK {
		p.t.Errorf("%s: status %s (exit %d), want ok; stderr: %s", p.id, res.Status, res.ExitCode, res.Stderr)
	}
	return o, &res.Result
}

func lastJSON(out string) obs {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var o obs
		if json.Unmarshal([]byte(lines[i]), &o) == nil && o != nil {
			if _, only := o["pidns"]; only && len(o) == 1 && i == 0 {
				return nil
			}
			return o
		}
	}
	return nil
}

// hostState is what must be the same after a probe as before it.
type hostState struct {
	mountinfo string
	tmp       []string
	fds       int
}

func snapshot(t *testing.T) hostState {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return hostState{mountinfo: string(mi), tmp: tmpEntries(), fds: testutil.CountFDs(t)}
}

func tmpEntries() []string {
	ents, _ := os.ReadDir(os.TempDir())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// checkHost runs after every probe: nothing of the run is left on the
// host (processes, cgroups, mounts, temp dirs, fds) and no canary was
// touched or reached.
func (s *suite) checkHost(p *probe, before hostState) {
	t := p.t
	t.Helper()
	var left []int
	if !testutil.WaitFor(30*time.Second, func() bool {
		left = append(testutil.HostProcsWith(p.marker), pidnsProcs(p.pidns, p.ended)...)
		return len(left) == 0
	}) {
		t.Errorf("host check: processes of the run left: %v", describe(left))
	}
	if d := s.ex.CgroupDir(); d != "" && testutil.ExpectCgroups() {
		// The executor keeps one spare group made ahead (never used: no
		// CPU or memory ever charged to it); every group a run used must
		// be gone.
		var groups []string
		if !testutil.WaitFor(10*time.Second, func() bool {
			all, _ := filepath.Glob(filepath.Join(d, fmt.Sprintf("airlock-%d-*", os.Getpid())))
			groups = nil
			spares := 0
			for _, g := range all {
				if neverUsed(g) {
					spares++
				} else {
					groups = append(groups, g)
				}
			}
			if spares > 1 {
				groups = all
			}
			return len(groups) == 0
		}) {
			t.Errorf("host check: per-run cgroups left: %v", groups)
		}
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); string(mi) != before.mountinfo {
		t.Errorf("host check: host mount table changed:\nbefore:\n%s\nafter:\n%s", before.mountinfo, mi)
	}
	if now := tmpEntries(); !slices.Equal(now, before.tmp) {
		t.Errorf("host check: temp dir entries changed: %v -> %v", before.tmp, now)
	}
	if !testutil.WaitFor(10*time.Second, func() bool { return testutil.CountFDs(t) <= before.fds }) {
		t.Errorf("host check: supervisor fds %d before, %d after", before.fds, testutil.CountFDs(t))
	}
	if h := sha256File(t, s.canaryFile); h != s.canaryHash {
		t.Errorf("host check: canary file changed (sha256 %s -> %s)", s.canaryHash, h)
	}
	if n := s.tcpHits.Load(); n != 0 {
		t.Errorf("host check: the host's 127.0.0.1 canary listener accepted %d connections", n)
	}
	if n := s.absHits.Load(); n != 0 {
		t.Errorf("host check: the host's abstract canary socket accepted %d connections", n)
	}
	for _, out := range p.outputs {
		if strings.Contains(out, s.canarySecret) {
			t.Errorf("host check: the canary file's secret appeared in the probe's output")
		}
		if strings.Contains(out, os.Getenv(secretEnv)) {
			t.Errorf("host check: the supervisor's secret env value appeared in the probe's output")
		}
	}
}

// neverUsed reports whether the cgroup dir (v1: its memory hierarchy's)
// was never charged anything: a spare made ahead, not a run's leftover.
func neverUsed(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, "memory.max_usage_in_bytes")); err == nil {
		return strings.TrimSpace(string(b)) == "0"
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	return err == nil && strings.HasPrefix(string(b), "usage_usec 0\n")
}

// pidnsProcs returns host pids in one of the given pid namespaces that
// started before the run ended (ns inode numbers are reused, so a later
// sandbox of another test can hold the same one).
func pidnsProcs(pidns []string, ended uint64) []int {
	if len(pidns) == 0 {
		return nil
	}
	var pids []int
	for _, pid := range allPids() {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		if err != nil || !slices.Contains(pidns, ns) {
			continue
		}
		if st := startTicks(pid); st != 0 && st < ended {
			pids = append(pids, pid)
		}
	}
	return pids
}

func allPids() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startTicks is a process's start time in clock ticks since boot.
func startTicks(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// uptimeTicks is now in clock ticks since boot (USER_HZ is 100).
func uptimeTicks() uint64 {
	b, _ := os.ReadFile("/proc/uptime")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return uint64(v*100) + 1
}

func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// hostZombies counts zombie processes on the host.
func hostZombies() int {
	n := 0
	for _, pid := range allPids() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			n++
		}
	}
	return n
}

// stream runs a request whose program prints ready when it wants the
// host to act: onReady runs then, and afterwards the program's stdin gets
// a line. It returns the whole stdout and the result.
func (p *probe) stream(req executor.Request, ready string, onReady func()) (string, *nsjail.Result) {
	p.t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	req.Stdin, req.Stdout = inR, outW
	type done struct {
		res *executor.Result
		err error
	}
	ch := make(chan done, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		res, err := p.s.ex.Execute(ctx, req)
		outW.Close()
		inR.Close()
		ch <- done{res, err}
	}()
	var all strings.Builder
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		all.WriteString(line + "\n")
		if line == ready {
			onReady()
			io.WriteString(inW, "done\n")
			inW.Close()
		}
	}
	io.Copy(io.Discard, outR)
	inW.Close()
	d := <-ch
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = uptimeTicks()
	p.outputs = append(p.outputs, all.String())
	p.notePidns(all.String())
	if d.err != nil {
		p.outputs = append(p.outputs, d.err.Error())
		p.t.Errorf("%s: run: %v", p.id, d.err)
	}
	if d.res == nil {
		return all.String(), nil
	}
	p.checkLandlock(resultOf(d.res))
	p.outputs = append(p.outputs, d.res.Stderr)
	return all.String(), &d.res.Result
}

func resultOf(r *executor.Result) *nsjail.Result {
	if r == nil {
		return nil
	}
	return &r.Result
}

// executorLang is a Python request whose code goes in as a file.
func executorLang(code string, pol policy.Policy) executor.Request {
	return executor.Request{Language: "python", Code: code, Policy: pol}
}

// netListenFree returns a 127.0.0.1 port that was free a moment ago.
func netListenFree() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func dialTCP(port int) (net.Conn, error) {
	return net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
}

// readKernelConfig returns the running kernel's config and where it
// came from, or "".
func readKernelConfig() (string, string) {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			if b, err := io.ReadAll(z); err == nil {
				return string(b), "/proc/config.gz"
			}
		}
	}
	var u unix.Utsname
	unix.Uname(&u)
	src := "/boot/config-" + unix.ByteSliceToString(u.Release[:])
	if b, err := os.ReadFile(src); err == nil {
		return string(b), src
	}
	return "", ""
}
