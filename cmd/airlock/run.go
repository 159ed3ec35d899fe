package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// exitSetup is the exit code when airlock failed before the program ran
// (as podman does).
const exitSetup = 125

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type runFlags struct {
	policyFile, preset, timeout, cpuTime, memory, maxOutput string
	workspace, chdir, backend                               string
	pids                                                    int
	cpus                                                    float64
	roBinds, binds, tmpfs, setenv, envPass, net             listFlag
	json, bestEffort, verbose                               bool
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.policyFile, "policy", "", "policy `file`, JSON or YAML (flags override it)")
	fs.StringVar(&f.preset, "preset", "", "policy preset `name` (default \"default\"; not with --policy)")
	fs.StringVar(&f.timeout, "timeout", "", "wall-clock limit, e.g. 10s (default 30s)")
	fs.StringVar(&f.cpuTime, "cpu-time", "", "CPU-time limit, e.g. 5s")
	fs.StringVar(&f.memory, "memory", "", "memory limit, e.g. 256MiB (default 512MiB)")
	fs.IntVar(&f.pids, "pids", 0, "maximum number of tasks (default 256)")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU rate limit in cores")
	fs.Var(&f.net, "net", "network: none|loopback|host|allow:RULE[,RULE...]|deny:RULE[,...] (default none; allow and deny repeatable; see docs/network.md)")
	fs.StringVar(&f.backend, "backend", "", "namespaces (default) or process (no isolation: rlimits, seccomp, process-group kill)")
	fs.Var(&f.roBinds, "ro-bind", "bind host `SRC[:DST]` read-only (repeatable)")
	fs.Var(&f.binds, "bind", "bind host `SRC[:DST]` writable (repeatable)")
	fs.Var(&f.tmpfs, "tmpfs", "mount a tmpfs at `DST[:SIZE]` (repeatable)")
	fs.StringVar(&f.workspace, "workspace", "", "host `dir` bound writable at /workspace (default: a tmpfs)")
	fs.StringVar(&f.chdir, "chdir", "", "working `dir` inside (default /workspace)")
	fs.Var(&f.setenv, "setenv", "set `K=V` in the sandbox (repeatable)")
	fs.Var(&f.envPass, "env-pass", "pass variable `K` from this environment (repeatable)")
	fs.StringVar(&f.maxOutput, "max-output", "", "cap of each captured stream with --json (default 1MiB)")
	fs.BoolVar(&f.json, "json", false, "capture output and print one JSON result")
	fs.BoolVar(&f.bestEffort, "best-effort", false, "run even if some limits cannot be enforced (reported)")
	fs.BoolVar(&f.verbose, "verbose", false, "also print each connection --net allow refused on stderr")
}

// policy builds the policy: preset or file, then the flags on top. A
// preset and a file together are refused, not merged: a policy file is
// whole (what it leaves out is the default policy's), and which of the
// two would win for a field is a guess no caller should have to make.
func (f *runFlags) policy() (policy.Policy, error) {
	if f.preset != "" && f.policyFile != "" {
		return policy.Policy{}, policy.Invalid("--preset", "%q cannot be combined with --policy %s: a policy file is complete on its own (the fields it leaves out take the default policy's values); give one of them", f.preset, f.policyFile)
	}
	p, err := policy.Preset(f.preset)
	if err != nil {
		return p, err
	}
	if f.policyFile != "" {
		data, err := os.ReadFile(f.policyFile)
		if err != nil {
			return p, policy.Invalid("policy", "%v", err)
		}
		if p, err = policy.Parse(data); err != nil {
			return p, err
		}
	}
	for _, d := range []struct {
		s   string
		dst *policy.Duration
	}{{f.timeout, &p.Timeout}, {f.cpuTime, &p.CPUTime}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return p, policy.Invalid("duration", "%v", err)
		}
		*d.dst = policy.Duration(v)
	}
	for _, s := range []struct {
		s   string
		dst *policy.Size
	}{{f.memory, &p.Memory}, {f.maxOutput, &p.MaxOutput}} {
		if s.s == "" {
			continue
		}
		v, err := policy.ParseSize(s.s)
		if err != nil {
			return p, policy.Invalid("size", "%v", err)
		}
		*s.dst = v
	}
	if f.pids != 0 {
		p.Pids = f.pids
	}
	if f.cpus != 0 {
		p.CPUs = f.cpus
	}
	if err := netFlags(&p, f.net); err != nil {
		return p, err
	}
	if f.backend != "" {
		p.Backend = f.backend
	}
	if f.workspace != "" {
		p.Workspace = f.workspace
	}
	if f.chdir != "" {
		p.Chdir = f.chdir
	}
	p.BestEffort = p.BestEffort || f.bestEffort
	for _, b := range []struct {
		list listFlag
		typ  policy.MountType
	}{{f.roBinds, policy.MountROBind}, {f.binds, policy.MountBind}} {
		for _, v := range b.list {
			src, dst, ok := strings.Cut(v, ":")
			if !ok {
				dst = src
			}
			p.Mounts = append(p.Mounts, policy.Mount{Type: b.typ, Source: src, Target: dst})
		}
	}
	for _, v := range f.tmpfs {
		dst, size, _ := strings.Cut(v, ":")
		m := policy.Mount{Type: policy.MountTmpfs, Target: dst}
		if size != "" {
			n, err := policy.ParseSize(size)
			if err != nil {
				return p, policy.Invalid("tmpfs", "%v", err)
			}
			m.Size = n
		}
		p.Mounts = append(p.Mounts, m)
	}
	for _, kv := range f.setenv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, policy.Invalid("setenv", "%q is not K=V", kv)
		}
		if p.Setenv == nil {
			p.Setenv = map[string]string{}
		}
		p.Setenv[k] = v
	}
	p.EnvPass = append(p.EnvPass, f.envPass...)
	return p, p.Validate()
}

const runUsage = "usage: airlock run [flags] -- PROGRAM [ARGS...]"

// runFlagSet is the flag set of run, exec and posture: the run flags,
// errors and usage on stderr.
func runFlagSet(name, usage string, stderr io.Writer) (*flag.FlagSet, *runFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	f := &runFlags{}
	f.register(fs)
	return fs, f
}

func runCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, f := runFlagSet("run", runUsage, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	p, err := f.policy()
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return exitSetup
	}
	return runRequest(executor.Request{Args: fs.Args(), Policy: p, Stdin: stdin}, f.json, f.verbose, stdout, stderr)
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

// runRequest runs one request through a new executor and reports it: the
// program's output passed through, or one JSON result with --json.
func runRequest(req executor.Request, asJSON, verbose bool, stdout, stderr io.Writer) int {
	if !asJSON {
		req.Stdout, req.Stderr = stdout, stderr
	}
	ex, err := executor.New(cliConfig(cacheDir()))
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return exitSetup
	}
	defer ex.Close()
	warnWeakened(req.Policy, stderr)
	// SIGINT/SIGTERM cancel the run; the sandbox is killed and reaped.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := ex.Execute(ctx, req)
	if verbose && res != nil {
		printDenials(res.Network, stderr)
	}
	if asJSON && res != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return setupExitCode(err)
	}
	return exitCode(&res.Result)
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
	return executor.Config{SeccompCacheDir: cache, InitPath: initPath, SpawnPath: spawnPath, CgroupMoveSelf: true}
}

// helpers are the sandbox init and spawn helper airlock starts, beside
// this binary when scripts/build made them (a build token set, so the
// init checks that it belongs to this binary): airlock-init, which starts
// faster than this binary re-executed (no C runtime, less Go), and with
// it airlock-spawn (cmd/airlock-spawn), which creates the sandbox's
// namespaces so that airlock never forks itself. "" for either: this
// binary re-executed as the init, forked by airlock.
func helpers() (initPath, spawnPath string) {
	if nsjail.BuildToken() == "" {
		return "", ""
	}
	exe, err := os.Executable()
	if err != nil {
		return "", ""
	}
	dir := filepath.Dir(exe)
	if initPath = executableIn(dir, "airlock-init"); initPath == "" {
		return "", ""
	}
	return initPath, executableIn(dir, "airlock-spawn")
}

// executableIn is dir/name if it is executable, else "".
func executableIn(dir, name string) string {
	p := filepath.Join(dir, name)
	if unix.Access(p, unix.X_OK) != nil {
		return ""
	}
	return p
}

// cacheDir is where the CLI keeps compiled seccomp filters:
// $XDG_CACHE_HOME/airlock or ~/.cache/airlock ("" = none).
func cacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "airlock")
	}
	return ""
}

// exitCode maps a result to airlock's exit code: the program's own code,
// or 128+N when it was killed by signal N (SIGKILL for timeouts and
// output overflow).
func exitCode(res *nsjail.Result) int {
	switch res.Status {
	case nsjail.StatusOK, nsjail.StatusExited:
		return res.ExitCode
	case nsjail.StatusSetupError:
		return exitSetup
	}
	if n := unix.SignalNum(res.Signal); n > 0 {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGKILL)
}

// setupExitCode follows podman: 127 when the program does not exist, 126
// when it cannot be executed, 125 for any other failure of airlock.
func setupExitCode(err error) int {
	var se *policy.SetupError
	if errors.As(err, &se) && se.Stage == "exec" {
		switch {
		case errors.Is(err, syscall.ENOENT):
			return 127
		case errors.Is(err, syscall.EACCES):
			return 126
		}
	}
	return exitSetup
}
