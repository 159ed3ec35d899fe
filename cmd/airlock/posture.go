package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/posture"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// proberPath is where the airlock binary is bound in the sandbox: a file
// in the root tmpfs, made while the plan is applied (before the root goes
// read-only), so it neither needs nor touches /tmp or a host workspace.
const proberPath = "/.airlock/airlock"

// postureReport is the inside report plus what only the host knows.
type postureReport struct {
	*posture.Report
	Enforced nsjail.Enforced `json:"enforced"`
}

const postureUsage = "usage: airlock posture [run flags] [--json]"

// postureCmd implements `airlock posture [run flags] [--json]`: it runs
// airlock itself in a sandbox under the policy and prints what the
// sandbox looks like from inside. The hidden forms `posture --inside`
// (the prober) and `posture --sweep` (its syscall-sweep child) run in the
// sandbox.
func postureCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "--inside":
			return postureInside(args[1:], stdout, stderr)
		case "--sweep":
			if err := posture.ServeSweep(stdin, stdout); err != nil {
				fmt.Fprintf(stderr, "airlock posture: %v\n", err)
				return 1
			}
			return 0
		}
	}
	fs, f := runFlagSet("posture", postureUsage, stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		if err == errHelp {
			return 0
		}
		return usageError(stdout, stderr, err)
	}
	if fs.NArg() > 0 {
		return usageError(stdout, stderr, policy.Invalid("posture", "takes no program or arguments, got %q: it runs its own prober; %s", fs.Arg(0), postureUsage))
	}
	p, err := f.policy()
	if err != nil {
		return usageError(stdout, stderr, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := collectPosture(ctx, p)
	if err != nil {
		fmt.Fprintf(stderr, "airlock posture: %v\n", err)
		return exitSetup
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		writePosture(stdout, r)
	}
	return 0
}

// collectPosture runs the prober under p and completes its report.
func collectPosture(ctx context.Context, p policy.Policy) (*postureReport, error) {
	if p.Backend == "process" {
		return nil, policy.Invalid("backend", "posture reports on the namespaces jail; the process backend cannot bind the prober in")
	}
	kills, err := killedSyscalls(p.Seccomp)
	if err != nil {
		return nil, err
	}
	src, cleanup, err := proberSource()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// Read-only (threat A03): rootless, the binary belongs to the
	// caller, which is also the sandbox's uid, so a writable view would
	// let the payload overwrite airlock itself (reopening /proc/self/exe
	// for writing, CVE-2019-5736 style). Through a ro bind that is EROFS.
	p.Mounts = append(p.Mounts, policy.Mount{Type: policy.MountROBind, Source: src, Target: proberPath})
	args := []string{proberPath, "posture", "--inside"}
	if len(kills) > 0 {
		args = append(args, "--skip-kill", strings.Join(kills, ","))
	}
	ex, err := executor.New(cliConfig(cacheDir()))
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	res, err := ex.Execute(ctx, executor.Request{Args: args, Policy: p})
	if err != nil {
		return nil, err
	}
	if res.Status != nsjail.StatusOK {
		msg := fmt.Sprintf("the prober did not finish: status %s, exit %d", res.Status, res.ExitCode)
		if res.SeccompSyscall != "" {
			msg += ", killed by the filter on " + res.SeccompSyscall + " (a syscall the prober's runtime needs)"
		}
		return nil, fmt.Errorf("%s: %s %s", msg, res.Error, strings.TrimSpace(res.Stderr))
	}
	var r posture.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		return nil, fmt.Errorf("the prober's report: %w", err)
	}
	host, err := posture.Namespaces()
	if err != nil {
		r.Errors = append(r.Errors, "host namespaces: "+err.Error())
	}
	r.CompareNamespaces(host)
	return &postureReport{Report: &r, Enforced: res.Enforced}, nil
}

// proberSource returns the host path to bind as the prober. Rootless, the
// sandbox runs as the caller, who could exec this binary by its path, so
// it is bound as it is. As root the sandbox is host uid 65534, which may
// not reach the binary's directory (a go build cache, /root): a copy goes
// into a fresh directory it can traverse, removed by cleanup.
func proberSource() (string, func(), error) {
	if os.Getuid() != 0 {
		exe, err := os.Executable()
		return exe, func() {}, err
	}
	dir, err := os.MkdirTemp("", "airlock-posture-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	dst := filepath.Join(dir, "airlock")
	if err := copyFile(dst, "/proc/self/exe"); err != nil {
		cleanup()
		return "", nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	return dst, cleanup, nil
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o555)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// killedSyscalls names the syscalls the prober must not call because the
// policy's filter kills on them (a kill ends the whole sandbox, and the
// report with it): every name of a kill rule, and, when the profile's
// default is kill, every name without an unconditional non-kill rule.
func killedSyscalls(s policy.Seccomp) ([]string, error) {
	prof, err := seccomp.Resolve(s)
	if err != nil || prof == nil {
		return nil, err
	}
	kill, safe := map[string]bool{}, map[string]bool{}
	for _, r := range prof.Rules {
		for _, n := range r.Names {
			switch {
			case r.Action == policy.ActKill:
				kill[n] = true
			case len(r.Args) == 0:
				safe[n] = true
			}
		}
	}
	if prof.DefaultAction == policy.ActKill {
		// Numbers the table does not name get ENOSYS before the default.
		for _, sc := range posture.Syscalls() {
			if !safe[sc.Name] && !strings.HasPrefix(sc.Name, "syscall_") {
				kill[sc.Name] = true
			}
		}
	}
	var names []string
	for n := range kill {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// postureInside is the prober: it reports and prints the JSON report.
func postureInside(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("posture --inside", flag.ContinueOnError)
	fs.SetOutput(stderr)
	skipKill := fs.String("skip-kill", "", "comma-separated syscalls the policy kills on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	skip := map[string]string{}
	for _, n := range strings.Split(*skipKill, ",") {
		if n != "" {
			skip[n] = "the policy kills on it (it would end the sandbox)"
		}
	}
	r := posture.Collect(posture.Options{SweepCommand: []string{"/proc/self/exe", "posture", "--sweep"}, Skip: skip})
	if err := json.NewEncoder(stdout).Encode(r); err != nil {
		fmt.Fprintf(stderr, "airlock posture: %v\n", err)
		return 1
	}
	return 0
}

// writePosture prints the report for people.
func writePosture(w io.Writer, r *postureReport) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-14s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "airlock posture, seen from inside the sandbox (pid %d, ppid %d)\n", r.PID, r.PPID)
	var ns []string
	for _, n := range r.Namespaces {
		state := "?"
		if n.New != nil {
			state = map[bool]string{true: "new", false: "HOST"}[*n.New]
		}
		ns = append(ns, n.Name+" "+state)
	}
	line("namespaces", "%s", strings.Join(ns, ", "))
	line("uid_map", "%s", strings.Join(r.UIDMap, "; "))
	line("gid_map", "%s", strings.Join(r.GIDMap, "; "))
	line("setgroups", "%s", r.Setgroups)
	c := r.Capabilities
	for _, s := range []struct {
		name string
		set  posture.CapSet
	}{{"cap inh", c.Inheritable}, {"cap prm", c.Permitted}, {"cap eff", c.Effective}, {"cap bnd", c.Bounding}, {"cap amb", c.Ambient}} {
		line(s.name, "%s %s", s.set.Hex, orNone(s.set.Names))
	}
	if r.Securebits != nil {
		line("securebits", "%#x %s", r.Securebits.Value, orNone(r.Securebits.Names))
	}
	line("no_new_privs", "%d", r.NoNewPrivs)
	line("seccomp", "mode %d, %d filter(s); enforced: %s (%d rules, %d instructions)", r.Seccomp, r.SeccompFilters,
		r.Enforced.Seccomp, r.Enforced.SeccompRules, r.Enforced.SeccompInstructions)
	sw := r.Syscalls
	if sw.Note != "" {
		line("syscalls", "%s", sw.Note)
	} else {
		line("syscalls", "%d called: %d blocked EPERM, %d ENOSYS, %d reachable; %d skipped, %d failed",
			sw.Counts.Swept, sw.Counts.EPERM, sw.Counts.ENOSYS, sw.Counts.Reachable, sw.Counts.Skipped, sw.Counts.Failed)
		line("  EPERM", "%s", strings.Join(sw.EPERM, " "))
		line("  ENOSYS", "%s", strings.Join(sw.ENOSYS, " "))
		for _, s := range append(sw.Skipped, sw.Failed...) {
			line("  not called", "%s: %s", s.Name, s.Reason)
		}
	}
	fmt.Fprintln(w, "mounts:")
	for _, m := range r.Mounts {
		fmt.Fprintf(w, "  %-28s %-8s %s\n", m.Target, m.FSType, m.Options)
	}
	var rl []string
	for _, l := range r.Rlimits {
		rl = append(rl, fmt.Sprintf("%s=%s/%s", l.Name, limit(l.Soft), limit(l.Hard)))
	}
	line("rlimits", "%s", strings.Join(rl, " "))
	line("cgroup", "%s", strings.Join(r.Cgroup, "; "))
	line("hostname", "%s", r.Hostname)
	line("interfaces", "%s", strings.Join(r.Interfaces, " "))
	line("/dev", "%s", strings.Join(r.Dev, ", "))
	line("env names", "%s", strings.Join(r.EnvNames, " "))
	e := r.Enforced
	limits := e.Limits
	if e.Cgroup != nil {
		limits += fmt.Sprintf(" (memory %d bytes, pids %d, cpus %g)", e.Cgroup.Memory, e.Cgroup.Pids, e.Cgroup.CPUs)
	}
	line("enforced", "backend %s, limits %s, network %s, timeout %s", e.Backend, limits, e.Network, e.Timeout)
	if e.Egress != "" {
		line("egress", "%s", e.Egress)
	}
	if len(e.NotEnforced) > 0 {
		line("NOT enforced", "%s", strings.Join(e.NotEnforced, ", "))
	}
	for _, msg := range r.Errors {
		line("unreadable", "%s", msg)
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return "(" + strings.Join(names, " ") + ")"
}

func limit(v int64) string {
	if v < 0 {
		return "unlimited"
	}
	return fmt.Sprint(v)
}
