package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// exitSetup is the exit code when the request is invalid or the host
// cannot enforce it (as docker and podman).
const exitSetup = nsjail.ExitInvalid

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// degradeFlag is --best-effort: bare (limits alone) or =NAME,NAME
// (policy.ParseDegrade). A bool flag to the flag package, so that a bare
// --best-effort never takes the next argument as its value.
type degradeFlag policy.Degrade

func (d *degradeFlag) String() string   { return policy.Degrade(*d).String() }
func (d *degradeFlag) IsBoolFlag() bool { return true }
func (d *degradeFlag) Set(v string) error {
	p, err := policy.ParseDegrade(v)
	*d = degradeFlag(p)
	return err
}

type runFlags struct {
	policyFile, preset, timeout, cpuTime, memory, maxOutput, killGrace string
	workspace, chdir, backend, pids, cpus                              string
	roBinds, binds, tmpfs, setenv, envPass, net                        listFlag
	json, verbose, tty                                                 bool
	bestEffort                                                         degradeFlag
	uid, gid                                                           optID // tty.go

	fs *flag.FlagSet // the set they were registered in: which were given
}

func (f *runFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.policyFile, "policy", "", "policy `file`, JSON or YAML, or an OCI seccomp profile (flags override it)")
	fs.StringVar(&f.preset, "preset", "", "policy preset `name` (default \"default\", the only one; not with --policy)")
	fs.StringVar(&f.timeout, "timeout", "", "wall-clock limit, e.g. 10s or 10 (seconds) (default 30s)")
	fs.StringVar(&f.cpuTime, "cpu-time", "", "CPU-time limit, e.g. 5s (default none)")
	fs.StringVar(&f.memory, "memory", "", "memory limit, e.g. 256MiB or 1G (default 512MiB)")
	fs.StringVar(&f.pids, "pids", "", "maximum number of tasks (default 256)")
	fs.StringVar(&f.cpus, "cpus", "", "CPU rate limit in cores, 0.01 up to this host's CPUs (default none)")
	fs.Var(&f.net, "net", "network: none|loopback|host|allow:RULE[,RULE...]|deny:RULE[,...] (default none; allow and deny repeatable; see docs/network.md)")
	fs.StringVar(&f.backend, "backend", "", "namespaces (default) or process (no namespaces: Landlock for files and TCP, seccomp, rlimits, a reaper; docs/security.md)")
	fs.Var(&f.roBinds, "ro-bind", "bind host `SRC[:DST]` read-only (repeatable; one argument, not bwrap's two)")
	fs.Var(&f.binds, "bind", "bind host `SRC[:DST]` writable (repeatable; one argument, not bwrap's two)")
	fs.Var(&f.tmpfs, "tmpfs", "mount a tmpfs at `DST[:SIZE]` (repeatable)")
	fs.StringVar(&f.workspace, "workspace", "", "host `dir` bound writable at /workspace (default: a tmpfs)")
	fs.StringVar(&f.chdir, "chdir", "", "working `dir` inside (default /workspace)")
	fs.Var(&f.setenv, "setenv", "set `K=V` in the sandbox (repeatable)")
	fs.Var(&f.envPass, "env-pass", "pass variable `K` from this environment (repeatable)")
	fs.StringVar(&f.maxOutput, "max-output", "", "cap of each output stream, captured or passed through (default 1MiB)")
	fs.StringVar(&f.killGrace, "kill-grace", "", "after a SIGINT or SIGTERM passed on to the program, how long it has before the sandbox is killed (default 2s)")
	fs.BoolVar(&f.json, "json", false, "capture output and print one JSON result, whatever happens")
	fs.Var(&f.bestEffort, "best-effort", "run even where the host cannot enforce these controls, each listed as not enforced: alone limits (rlimits for --memory/--pids, no --cpus); =limits,seccomp,namespaces,landlock,network names each other one")
	fs.BoolVar(&f.verbose, "verbose", false, "also print each connection --net allow refused on stderr")
	fs.Var(&f.uid, "uid", "the program's uid `N` inside (default 1000, \"sandbox\"; 0 looks like root)")
	fs.Var(&f.gid, "gid", "the program's gid `N` inside (default 1000)")
	fs.BoolVar(&f.tty, "tty", false, "give the program a pty of its own, relayed to this terminal (interactive shells, REPLs)")
}

// given reports whether the flag was on the command line.
func (f *runFlags) given(name string) bool {
	found := false
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	}
	return found
}

// policy builds the policy: preset or file, then the flags on top. A
// preset and a file together are refused, not merged: a policy file is
// whole (what it leaves out is the default policy's), and which of the
// two would win for a field is a guess no caller should have to make.
// Every error names the flag, as typed, and shows a valid value.
func (f *runFlags) policy() (policy.Policy, error) {
	if f.preset != "" && f.policyFile != "" {
		return policy.Policy{}, policy.Invalid("--preset", "%q cannot be combined with --policy %s: a policy file is complete on its own (the fields it leaves out take the default policy's values); give one of them", f.preset, f.policyFile)
	}
	p, err := policy.Preset(f.preset)
	if err != nil {
		return p, policy.Invalid("--preset", "unknown preset %q (known: default)", f.preset)
	}
	if f.policyFile != "" {
		if p, err = policyFile(f.policyFile); err != nil {
			return p, err
		}
	}
	for _, d := range []struct {
		name, s, def string
		dst          *policy.Duration
	}{{"timeout", f.timeout, "30s", &p.Timeout}, {"cpu-time", f.cpuTime, "no CPU-time limit", &p.CPUTime}, {"kill-grace", f.killGrace, "2s", &p.KillGrace}} {
		if !f.given(d.name) {
			continue
		}
		v, err := flagDuration(d.name, d.s, d.def)
		if err != nil {
			return p, err
		}
		*d.dst = v
	}
	for _, s := range []struct {
		name, s, def string
		dst          *policy.Size
	}{{"memory", f.memory, "512MiB", &p.Memory}, {"max-output", f.maxOutput, "1MiB", &p.MaxOutput}} {
		if !f.given(s.name) {
			continue
		}
		v, err := flagSize(s.name, s.s, s.def)
		if err != nil {
			return p, err
		}
		*s.dst = v
	}
	if f.given("pids") {
		n, err := strconv.Atoi(strings.TrimSpace(f.pids))
		switch {
		case err != nil:
			return p, policy.Invalid("--pids", "%q is not a whole number; example: --pids 64", f.pids)
		case n == 0:
			return p, policy.Invalid("--pids", "0 is not a limit: omit --pids for the default (256)")
		case n < 0:
			return p, policy.Invalid("--pids", "%d: must be at least 1; example: --pids 64", n)
		}
		p.Pids = n
	}
	if f.given("cpus") {
		if p.CPUs, err = flagCPUs(f.cpus); err != nil {
			return p, err
		}
	}
	if err := netFlags(&p, f.net); err != nil {
		return p, err
	}
	if f.given("backend") {
		if f.backend != "namespaces" && f.backend != "process" {
			return p, policy.Invalid("--backend", "%q is not one of namespaces, process", f.backend)
		}
		p.Backend = f.backend
	}
	if f.given("workspace") {
		p.Workspace = f.workspace
	}
	if f.given("chdir") {
		p.Chdir = f.chdir
	}
	p.BestEffort |= policy.Degrade(f.bestEffort)
	f.uid.apply(&p.UID)
	f.gid.apply(&p.GID)
	for _, b := range []struct {
		name string
		list listFlag
		typ  policy.MountType
	}{{"ro-bind", f.roBinds, policy.MountROBind}, {"bind", f.binds, policy.MountBind}} {
		for _, v := range b.list {
			m, err := flagBind(b.name, v, b.typ)
			if err != nil {
				return p, err
			}
			p.Mounts = append(p.Mounts, m)
		}
	}
	if err := duplicateTargets(p.Mounts); err != nil {
		return p, err
	}
	for _, v := range f.tmpfs {
		dst, size, _ := strings.Cut(v, ":")
		m := policy.Mount{Type: policy.MountTmpfs, Target: dst}
		if size != "" {
			n, err := flagSize("tmpfs", size, "the memory limit")
			if err != nil {
				return p, err
			}
			m.Size = n
		}
		if err := flagMount("tmpfs", v, m); err != nil {
			return p, err
		}
		p.Mounts = append(p.Mounts, m)
	}
	for _, kv := range f.setenv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, policy.Invalid("--setenv", "%q is not K=V; example: --setenv %s=1 (bwrap's --setenv K V is --setenv K=V here; --env-pass %s copies it from this environment)", kv, kv, kv)
		}
		if !envName(k) {
			return p, policy.Invalid("--setenv", "%q is not a variable name (letters, digits and _, not starting with a digit)", k)
		}
		if p.Setenv == nil {
			p.Setenv = map[string]string{}
		}
		p.Setenv[k] = v
	}
	for _, k := range f.envPass {
		if !envName(k) {
			return p, policy.Invalid("--env-pass", "%q is not a variable name; --env-pass takes a name (--env-pass HOME), --setenv K=V sets a value", k)
		}
	}
	p.EnvPass = append(p.EnvPass, f.envPass...)
	if err := p.Validate(); err != nil {
		return p, f.flagError(err)
	}
	return p, f.flagError(checkWorkspace(p))
}

// policyFlags are the run flags by the policy field they set.
var policyFlags = map[string]string{
	"timeout": "timeout", "cpu_time": "cpu-time", "kill_grace": "kill-grace", "memory": "memory", "pids": "pids",
	"cpus": "cpus", "net": "net", "backend": "backend", "workspace": "workspace", "chdir": "chdir",
	"max_output": "max-output", "setenv": "setenv", "env_pass": "env-pass",
}

// flagError names the flag in an invalid policy field's error, when the
// value came from that flag (not from the policy file).
func (f *runFlags) flagError(err error) error {
	var ie *policy.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	if name, ok := policyFlags[ie.Field]; ok && f.given(name) {
		return &policy.InvalidError{Field: "--" + name, Reason: ie.Reason}
	}
	return err
}

// callerEnv carries the build token of the CLI that hands a request to
// airlock-daemon (daemon_slim.go): the daemon refuses another build's
// (checkCaller), as airlock-init does, so that a stale daemon left beside
// a newer CLI never runs its requests with older code.
const callerEnv = "_AIRLOCK_CLI_TOKEN"

// checkCaller is nil unless this process was handed a request by a CLI of
// another build than its own; it unsets callerEnv either way.
func checkCaller() error {
	token, ok := os.LookupEnv(callerEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(callerEnv)
	if token == nsjail.BuildToken() {
		return nil
	}
	exe, _ := os.Executable()
	return &policy.SetupError{Stage: "airlock-daemon", Err: fmt.Errorf("%s was not built with the airlock that ran it (build token %q, its own %q): build both with scripts/build", exe, token, nsjail.BuildToken())}
}

// readOnce reports whether path names input that can be read only once:
// "-" (stdin), a pipe, a socket, a terminal, /dev/stdin or a process
// substitution; not a regular file (or one that is not there: the run
// refuses it itself).
func readOnce(path string) bool {
	if path == "-" {
		return true
	}
	if path == "" {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && !fi.Mode().IsRegular()
}

// policyFile reads a policy file (JSON or YAML), or an OCI/Docker seccomp
// profile (a JSON object with "defaultAction"), which becomes the default
// policy with that profile: run takes what policy validate takes. Errors
// name the file.
func policyFile(name string) (policy.Policy, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return policy.Policy{}, policy.Invalid("--policy", "%v", err)
	}
	if bytes.Contains(data, []byte(`"defaultAction"`)) {
		abs, err := filepath.Abs(name)
		if err != nil {
			return policy.Policy{}, policy.Invalid("--policy", "%v", err)
		}
		p := policy.Default()
		p.Seccomp.Profile = abs
		return p, p.Validate()
	}
	p, err := policy.Parse(data)
	var ie *policy.InvalidError
	if errors.As(err, &ie) {
		return p, &policy.InvalidError{Field: ie.Field, Reason: ie.Reason + " (in the policy file " + name + ")"}
	}
	return p, err
}

// flagDuration parses a duration flag: Go's form (10s, 1m30s, 500ms) or a
// bare number of seconds, as a policy file takes it. Zero is refused: it
// would silently mean the default.
func flagDuration(name, s, def string) (policy.Duration, error) {
	var d time.Duration
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1e9 {
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(strings.TrimSpace(s)); err != nil {
		return 0, policy.Invalid("--"+name, "%q is not a duration; example: --%s 10s (a bare number is seconds)", s, name)
	}
	switch {
	case d == 0:
		return 0, policy.Invalid("--"+name, "0 is not a limit: omit --%s for the default (%s)", name, def)
	case d < 0:
		return 0, policy.Invalid("--"+name, "%s: must be positive; example: --%s 10s", s, name)
	}
	return policy.Duration(d), nil
}

// flagSize parses a size flag (64MiB, 1G, 2T, 4096). Zero is refused.
func flagSize(name, s, def string) (policy.Size, error) {
	v, err := policy.ParseSize(s)
	switch {
	case err != nil:
		return 0, policy.Invalid("--"+name, "%q is not a size; example: --%s 256MiB (suffixes K, M, G, T, with or without iB; powers of 1024)", s, name)
	case v == 0:
		return 0, policy.Invalid("--"+name, "0 is not a limit: omit --%s for the default (%s)", name, def)
	}
	return v, nil
}

// flagCPUs parses --cpus: a number of cores from 0.01 (the kernel's
// smallest CFS quota over airlock's period) to this host's CPU count.
func flagCPUs(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	n := runtime.NumCPU()
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, policy.Invalid("--cpus", "%q is not a number of cores; example: --cpus 0.5", s)
	case v == 0:
		return 0, policy.Invalid("--cpus", "0 is not a limit: omit --cpus for no CPU rate limit (the default)")
	case v < 0.01:
		return 0, policy.Invalid("--cpus", "%s is below the minimum, 0.01 cores; example: --cpus 0.5", s)
	case v > float64(n):
		return 0, policy.Invalid("--cpus", "%s is more than this host's %d CPUs; the range is 0.01 to %d", s, n, n)
	}
	return v, nil
}

// flagBind parses --ro-bind or --bind SRC[:DST] and checks it as the run
// would, naming the flag.
func flagBind(name, v string, typ policy.MountType) (policy.Mount, error) {
	src, dst, ok := strings.Cut(v, ":")
	if !ok {
		dst = src
	}
	m := policy.Mount{Type: typ, Source: src, Target: dst}
	if src == "" {
		return m, policy.Invalid("--"+name, "%q has no source; example: --%s /data:/data", v, name)
	}
	if !filepath.IsAbs(src) {
		return m, policy.Invalid("--"+name, "%q: the source must be an absolute host path; example: --%s \"$PWD/%s\"", v, name, src)
	}
	if _, err := os.Stat(src); err != nil {
		return m, policy.Invalid("--"+name, "%s: the source does not exist on the host (%v)", v, errors.Unwrap(err))
	}
	return m, flagMount(name, v, m)
}

// duplicateTargets refuses two binds at the same target: the later would
// hide the earlier without a word.
func duplicateTargets(mounts []policy.Mount) error {
	seen := map[string]string{}
	for _, m := range mounts {
		t := filepath.Clean(m.Target)
		if prev, ok := seen[t]; ok {
			return policy.Invalid("--"+string(m.Type), "%s and %s both mount at %s: the second would hide the first; give each its own target", prev, m.Source, t)
		}
		seen[t] = m.Source
	}
	return nil
}

// flagMount checks one mount as the policy would, in the flag's terms.
func flagMount(name, v string, m policy.Mount) error {
	one := policy.Policy{Mounts: []policy.Mount{m}}
	err := one.Validate()
	var ie *policy.InvalidError
	if errors.As(err, &ie) {
		return policy.Invalid("--"+name, "%s: %s: %s (reserved inside: /, /proc, /dev)", v, ie.Field, ie.Reason)
	}
	return err
}

// envName reports whether k is a portable environment variable name.
func envName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkWorkspace refuses, before anything runs, a workspace the sandbox
// could not write: the sandbox runs as an unprivileged host uid (65534
// when airlock runs as root, the caller's own uid otherwise), whatever
// id it has inside, so a root-owned directory is read-only to it.
func checkWorkspace(p policy.Policy) error {
	if p.Workspace == "" {
		return nil
	}
	fi, err := os.Stat(p.Workspace)
	if err != nil {
		return policy.Invalid("--workspace", "%s: %v", p.Workspace, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return policy.Invalid("--workspace", "%s is not a directory", p.Workspace)
	}
	var sfs unix.Statfs_t
	if unix.Statfs(p.Workspace, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		return policy.Invalid("--workspace", "%s is on a read-only filesystem: the program could not write there (use a --ro-bind for a read-only directory)", p.Workspace)
	}
	if uid := os.Geteuid(); uid != 0 {
		if unix.Access(p.Workspace, unix.W_OK|unix.X_OK) != nil {
			return policy.Invalid("--workspace", "%s is not writable by uid %d, which the sandbox runs as (fix: chmod u+w %s)", p.Workspace, uid, p.Workspace)
		}
		return nil
	}
	uid, gid := 65534, 65534 // the host ids a sandbox started by root maps to
	st := fi.Sys().(*syscall.Stat_t)
	mode := fi.Mode().Perm()
	writable := int(st.Uid) == uid && mode&0o300 == 0o300 ||
		int(st.Gid) == gid && mode&0o030 == 0o030 ||
		mode&0o003 == 0o003
	if !writable {
		return policy.Invalid("--workspace", "%s is not writable by host uid %d, which the sandbox runs as when airlock runs as root (uid 0 inside is not root on the host); fix: chown %d:%d %s, or chmod o+rwx %s", p.Workspace, uid, uid, gid, p.Workspace, p.Workspace)
	}
	return nil
}

// bwrapArity detects bwrap's two-argument --ro-bind/--bind SRC DST (and
// --setenv K V): the flag took SRC, and DST became the program. It is
// caught when the program is the flag's value again, a host directory,
// or followed by a "--" of its own.
func bwrapArity(args []string, fs *flag.FlagSet) error {
	rest := fs.Args()
	if len(rest) == 0 {
		return nil
	}
	i := len(args) - len(rest) // where the positionals start
	if i < 2 || i > len(args) {
		return nil
	}
	name := strings.TrimLeft(args[i-2], "-")
	val := args[i-1]
	if name != "ro-bind" && name != "bind" || strings.Contains(val, ":") {
		return nil
	}
	fi, err := os.Stat(rest[0])
	if rest[0] == val || err == nil && fi.IsDir() || slices.Contains(rest[1:], "--") {
		return policy.Invalid("--"+name, "%s takes one argument, SRC[:DST] (bwrap takes two): write --%s %s:%s; as given, %q would be run as the program", "--"+name, name, val, rest[0], rest[0])
	}
	return nil
}

const runUsage = `usage: airlock run [flags] -- PROGRAM [ARGS...]

Runs PROGRAM in a sandbox. Exit status: the program's own; 128+N when
signal N ended it (airlock's kills included: a timeout is 137); 130/143
when airlock was interrupted (SIGINT/SIGTERM); 125 when the request is
invalid or this host cannot enforce it; 75 when a transient failure
stopped it and a retry can help; 126/127 when PROGRAM cannot be executed
or does not exist in the sandbox. With --json, one JSON result on stdout
whatever happens (docs/cli.md).

Example: airlock run --timeout 10s --memory 256MiB -- python3 -c 'print(1)'

flags:`

// runFlagSet is the flag set of run, exec and posture. Errors are
// reported by the command (parseFlags), not by the flag package.
func runFlagSet(name, usage string, out io.Writer) (*flag.FlagSet, *runFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	f := &runFlags{}
	f.register(fs)
	return fs, f
}

// errHelp: --help was asked for and printed; exit 0.
var errHelp = errors.New("help printed")

// parseFlags parses args into fs. --help prints the usage on stdout
// (errHelp); a parse error is an invalid request naming the flag as
// typed, with the closest flag when there is one.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(out)
		return errHelp
	}
	if err == nil {
		return nil
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		hint := "; see airlock " + fs.Name() + " --help"
		if s := closest(name, flagNames(fs)); s != "" {
			hint = "; did you mean --" + s + "?" + hint
		}
		return policy.Invalid("--"+name, "no such flag%s", hint)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return policy.Invalid(dashed(name), "needs a value; see airlock %s --help", fs.Name())
	}
	return policy.Invalid("flags", "%s", strings.ReplaceAll(msg, " -", " --"))
}

// dashed is a flag's name as written: -c, --timeout.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// closest is the candidate nearest to s by edit distance, if it is near
// enough to be a typo (or s is a prefix of it); "" otherwise.
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if len(s) >= 2 && strings.HasPrefix(c, s) {
			return c
		}
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// jsonAsked reports whether --json is among the flags of args (before
// the program), for a refusal that comes before the flags are parsed.
func jsonAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
}

func runCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &reporter{json: jsonAsked(args), stdout: stdout, stderr: stderr, daemon: append([]string{"run"}, args...)}
	fs, f := runFlagSet("run", runUsage, stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		if err == errHelp {
			return 0
		}
		return o.fail(err)
	}
	o.json, o.verbose = f.json, f.verbose
	if fs.NArg() == 0 {
		return o.fail(policy.Invalid("PROGRAM", "no program given: airlock run [flags] -- PROGRAM [ARGS...]"))
	}
	if err := bwrapArity(args, fs); err != nil {
		return o.fail(err)
	}
	if handsOverInput() && readOnce(f.policyFile) {
		return o.fail(daemonExec("run", args, "--policy", "this airlock runs that binary for a policy file it can read only once"))
	}
	p, err := f.policy()
	if err != nil {
		return o.fail(err)
	}
	return f.run(executor.Request{Args: fs.Args(), Policy: p, Stdin: stdin}, o)
}

// warnWeakened prints one line for each way p is weaker than the default
// policy (the result's enforced.weakened says the same): a weaker policy
// runs, as asked, but never silently.
func warnWeakened(p policy.Policy, stderr io.Writer) {
	w, err := seccomp.Weakenings(p)
	if err != nil {
		return // the run refuses the same policy, naming the error
	}
	for _, s := range w {
		fmt.Fprintf(stderr, "airlock: weaker than the default policy: %s\n", s)
	}
}

// cliConfig is the executor configuration of every CLI command: the
// helpers beside this binary, the seccomp cache (cache; "" = none), and
// CgroupMoveSelf: on cgroup v2 the CLI moves itself into a leaf of its
// own cgroup, if that is what makes the cgroup usable. A library must not
// move its host process unasked; the CLI is a one-shot process acting
// for its caller, whose cgroup it was started in to use, and moving
// itself is what its caller would otherwise have to do by hand.
func cliConfig(cache string) executor.Config {
	initPath, spawnPath := helpers()
	return executor.Config{SeccompCacheDir: cache, InitPath: initPath, SpawnPath: spawnPath, CgroupMoveSelf: true, Logger: phases.logger(),
		TimerSlack: entryTimerSlack()}
}

// testSpawn is set by this package's tests only (main_test.go): the
// spawn helper that the test binary, which has no build token, uses as
// its sandboxes' reaper, so that they need not exec the test binary's
// embedded one (a large binary, costly to start under the cgroup v2
// guest's emulation). "" in airlock itself.
var testSpawn string

// helpers are the sandbox init and spawn helper airlock starts, beside
// this binary when scripts/build made them (a build token set, so the
// init checks that it belongs to this binary): airlock-init, which starts
// faster than this binary re-executed (no C runtime, less Go), and
// airlock-spawn (cmd/airlock-spawn), the sandbox's pid 1, which with
// airlock-init also creates the sandbox's namespaces so that airlock
// never forks itself. "" for either: this binary re-executed as the
// init, forked by airlock; its own embedded reaper as pid 1 (a cgo
// build; the slim CLI, without cgo, refuses to run without airlock-spawn:
// nsjail.CheckReaper).
func helpers() (initPath, spawnPath string) {
	if nsjail.BuildToken() == "" {
		return "", testSpawn
	}
	exe, err := os.Executable()
	if err != nil {
		return "", ""
	}
	dir := filepath.Dir(exe)
	return executableIn(dir, "airlock-init"), executableIn(dir, "airlock-spawn")
}

// executableIn is dir/name if it is executable, else "".
func executableIn(dir, name string) string {
	p := filepath.Join(dir, name)
	if unix.Access(p, unix.X_OK) != nil {
		return ""
	}
	return p
}

// cacheDir is where the CLI keeps compiled seccomp filters (of policies
// other than the default, whose programs are compiled ahead:
// seccomp.Precompiled): see userCacheDir.
func cacheDir() string { return userCacheDir(os.Getenv, os.Geteuid()) }

// userCacheDir is the cache directory of the user uid with environment
// getenv: $XDG_CACHE_HOME/airlock or ~/.cache/airlock, where it exists
// or can be made in a home of this user's; else, for a user without a
// home (daemons, CI users, nobody: HOME=/nonexistent), a directory that
// no one else can have made: $XDG_RUNTIME_DIR/airlock when that runtime
// dir is this user's and private (mode 0700), else airlock-UID in
// $TMPDIR or /tmp (made 0700). It is never made here, and a home is
// never made: the executor makes the last directories, 0700, and uses
// one only while it is this user's, not writable by others and not a
// symlink (Config.SeccompCacheDir), so that one another user made
// first in a shared /tmp is refused, never trusted.
func userCacheDir(getenv func(string) string, uid int) string {
	base := getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(base) {
		base = ""
		if home := getenv("HOME"); filepath.IsAbs(home) {
			base = filepath.Join(home, ".cache")
			if !ownedDir(home, uid) && !ownedDir(base, uid) {
				base = "" // not a home this user can keep a cache in
			}
		}
	} else if !ownedDir(base, uid) && !ownedDir(filepath.Dir(base), uid) {
		base = "" // neither there nor to be made by this user
	}
	if base != "" {
		return filepath.Join(base, "airlock")
	}
	if run := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(run) && ownedDir(run, uid) && privateMode(run) {
		return filepath.Join(run, "airlock")
	}
	tmp := getenv("TMPDIR")
	if !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "airlock-"+strconv.Itoa(uid))
}

// ownedDir: path is a directory (not a symlink to one) owned by uid.
func ownedDir(path string, uid int) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid
}

// privateMode: path's group and others have no access to it.
func privateMode(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&0o077 == 0
}
