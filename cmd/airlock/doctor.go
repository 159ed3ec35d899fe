package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/policy/hostprobe"
)

const doctorUsage = "usage: airlock doctor [--json]\n\nWhat this host can enforce, and how to fix what it cannot; exit 0 when\neverything the default policy needs is there, 1 otherwise.\n"

// doctorFlagSet is doctor's flag set, printing to out.
func doctorFlagSet(out io.Writer) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(out)
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), doctorUsage+"\nflags:\n")
		fs.PrintDefaults()
	}
	return fs, asJSON
}

// doctorCmd implements `airlock doctor [--json]`: what this host can
// enforce, and how to fix what it cannot. Exit 0 when everything the
// default policy needs is there, 1 otherwise.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	fs, asJSON := doctorFlagSet(stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		if err == errHelp {
			return 0
		}
		return usageError(stdout, stderr, err)
	}
	if fs.NArg() > 0 {
		return usageError(stdout, stderr, policy.Invalid("doctor", "takes no arguments, got %q; usage: airlock doctor [--json]", fs.Arg(0)))
	}
	// As the CLI's executor sees the host: it may move itself into a
	// cgroup leaf (cliConfig).
	r := hostprobe.Probe(hostprobe.Options{CgroupMoveSelf: true})
	dry, langs, packaging := dryRun()
	egress := policy.Capability{ID: checkEgress, Name: "net allow", Detail: "not tried: the sandbox dry run failed"}
	if dry.OK {
		egress = egressRun()
	}
	r.Checks = append(r.Checks, dry, egress)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(struct {
			*policy.Host
			OK        bool     `json:"ok"`
			Languages []string `json:"languages"`
			// Packaging is set when the installation is at fault (an
			// airlock-init from another build), not the host.
			Packaging string `json:"packaging,omitempty"`
			// Helpers are airlock's helper binaries, found or not.
			Helpers []helperInfo `json:"helpers"`
		}{r, r.OK(), langs, packaging, helperReport()})
	} else {
		fmt.Fprintf(stdout, "airlock doctor: kernel %s, uid %d, cgroup mode %s\n", r.Kernel, r.UID, r.CgroupMode)
		fmt.Fprintln(stdout, "  (ok: present; MISS: the default policy needs it; miss: optional, what it adds is named)")
		for _, c := range r.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "MISS"
				if !c.Needed {
					mark = "miss"
				}
			}
			fmt.Fprintf(stdout, "  %s  %-16s %s\n", mark, c.Name, c.Detail)
			if !c.OK && c.Fix != "" && !strings.Contains(c.Detail, c.Fix) {
				fmt.Fprintf(stdout, "        %-16s fix: %s\n", "", c.Fix)
			}
		}
		if len(langs) > 0 {
			fmt.Fprintf(stdout, "  languages exec can run here: %s\n", strings.Join(langs, ", "))
		} else {
			fmt.Fprintln(stdout, "  languages exec can run here: none found (install python3, node, bash, ...)")
		}
		switch {
		case packaging != "":
			fmt.Fprintf(stdout, "airlock's installation is broken, not this host: %s\n", packaging)
		case r.OK():
			fmt.Fprintln(stdout, "the default policy can be enforced on this host")
		default:
			fmt.Fprintln(stdout, "the default policy can NOT be enforced on this host (see MISS above)")
		}
		for _, l := range backendLines(r) {
			fmt.Fprintln(stdout, l)
		}
		fmt.Fprintln(stdout, "helpers (each only makes runs faster: the same controls and pid 1 without them):")
		for _, h := range helperReport() {
			mark := "absent"
			if h.Found {
				mark = "found "
			}
			fmt.Fprintf(stdout, "  %s  %-16s %s\n", mark, h.Name, h.Adds)
			if h.Path != "" {
				fmt.Fprintf(stdout, "          %-16s %s\n", "", h.Path)
			}
		}
	}
	if !r.OK() {
		return 1
	}
	return 0
}

// helperInfo is one of airlock's helpers in doctor's report: found
// (Path, where it is one beside this binary), and what it adds.
type helperInfo struct {
	Name  string `json:"name"`
	Found bool   `json:"found"`
	Path  string `json:"path,omitempty"`
	Adds  string `json:"adds"`
}

// helperReport says which of airlock's helpers this binary has: those
// scripts/build puts beside it (used only with a build token: helpers),
// and the reaper built into it (a cgo build: nsjail.EmbeddedReaper).
// Doctor runs in airlock-daemon for the slim CLI (daemon_slim.go): the
// one directory holds both, and the slim CLI's sandboxes need
// airlock-spawn as their reaper, which the dry run then tries.
func helperReport() []helperInfo {
	initPath, spawnPath := helpers()
	daemon := ""
	if exe, err := os.Executable(); err == nil && nsjail.BuildToken() != "" {
		daemon = executableIn(filepath.Dir(exe), "airlock-daemon")
	}
	self := "this binary"
	if exe, err := os.Executable(); err == nil {
		self = exe
	}
	embedded := helperInfo{Name: "embedded reaper", Found: nsjail.EmbeddedReaper(),
		Adds: "pid 1 of a sandbox when airlock-spawn is absent (built in with cgo)"}
	if embedded.Found {
		embedded.Path = self
	}
	return []helperInfo{
		{Name: "airlock-init", Found: initPath != "", Path: initPath,
			Adds: "a sandbox init without cgo: starts faster than this binary re-executed as the init"},
		{Name: "airlock-spawn", Found: spawnPath != "", Path: spawnPath,
			Adds: "creates each sandbox's namespaces so that airlock never forks itself, and is its pid 1: static, faster to start than the embedded reaper (the namespaces only with airlock-init)"},
		{Name: "airlock-daemon", Found: daemon != "", Path: daemon,
			Adds: "lets the CLI beside it be slim (no cgo: a faster start), compiling its seccomp filters and running serve and mcp"},
		embedded,
	}
}

// backendLines say which backend runs here, and what the process
// backend (the fallback) isolates on this host (docs/hosts.md has the
// table).
func backendLines(h *policy.Host) []string {
	_, jailErr := policy.Check(policy.Policy{}, h)
	var u *policy.UnsupportedError
	jail := "namespaces (the jail): the default here"
	if errors.As(jailErr, &u) && u.Control == "namespaces" {
		jail = "namespaces (the jail): cannot run here; only --backend process, or --best-effort=namespaces, runs"
	}
	proc := "an unprivileged uid, limits, no_new_privs, seccomp, process-group kill"
	// best_effort: what it isolates here, and what not, even where a
	// plain run would be refused (the default net none without
	// Landlock's TCP rules).
	enf, err := policy.Check(policy.Policy{Backend: "process", BestEffort: policy.DegradeLimits | policy.DegradeSeccomp | policy.DegradeLandlock | policy.DegradeNetwork}, h)
	if err != nil {
		return []string{"backends: " + jail}
	}
	if enf.Landlock > 0 {
		proc += fmt.Sprintf("; Landlock ABI %d: files (system dirs read-only, the workspace writable)", enf.Landlock)
		if enf.LandlockNet {
			proc += ", TCP (but --net host)"
		}
		if enf.LandlockScope {
			proc += ", signals and abstract sockets"
		}
	}
	if enf.Sockets {
		proc += "; the filter makes only TCP sockets (no UDP, unix, netlink, ...; but --net host)"
	}
	return []string{"backends: " + jail,
		"  process (--backend process; --best-effort=namespaces where the jail cannot run) isolates: " + proc,
		"  and not: " + strings.Join(append(enf.NotEnforced(), "host processes are visible (no pid namespace)"), ", ")}
}

// checkDryRun is the ID of doctor's own check, the dry run; checkEgress
// the dry run of net allow.
const (
	checkDryRun policy.CheckID = "dry_run"
	checkEgress policy.CheckID = "egress"
)

// egressRun starts a sandbox with net allow: the mode the host gives
// egress by allow-list (a listener on the sandbox's loopback, handed to
// this process's proxy), or why it cannot.
func egressRun() policy.Capability {
	c := policy.Capability{ID: checkEgress, Name: "net allow"}
	ex, err := executor.New(cliConfig(""))
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer ex.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := policy.Default()
	p.Timeout, p.Net, p.Egress.Allow = policy.Duration(20*time.Second), policy.NetAllow, []string{"doctor.invalid"}
	res, err := ex.Execute(ctx, executor.Request{Args: []string{"/bin/sh", "-c", "exit 0"}, Policy: p})
	switch {
	case err != nil:
		c.Detail = err.Error()
	case res.Status != nsjail.StatusOK || res.Enforced.Network != "allow":
		c.Detail = fmt.Sprintf("status %s, network %s: %s%s", res.Status, res.Enforced.Network, res.Error, res.Stderr)
	default:
		c.OK = true
		c.Detail = "egress mode: the sandbox's own network namespace (lo only) and this process's HTTP/SOCKS5 proxy behind a listener on its loopback, admitting the allow-list (names resolved here; loopback, private and metadata addresses refused unless named)"
	}
	return c
}

// dryRun starts a real sandbox with the default policy: the authoritative
// test (an LSM may let namespaces be created and then deny everything in
// them). It returns the check, the languages exec can run here, and, when
// the failure is airlock's own installation (an airlock-init from another
// build), what is wrong with it.
func dryRun() (policy.Capability, []string, string) {
	c := policy.Capability{ID: checkDryRun, Name: "sandbox dry run", Needed: true}
	ex, err := executor.New(cliConfig(""))
	if err != nil {
		c.Detail = err.Error()
		return c, nil, ""
	}
	// Close removes the run's cgroup and waits for it: without it this
	// process exits while the removal runs in the background, and every
	// doctor run left its cgroup behind.
	defer ex.Close()
	langs := ex.Capabilities().Languages
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := policy.Default()
	p.Timeout = policy.Duration(20 * time.Second)
	res, err := ex.Execute(ctx, executor.Request{Args: []string{"/bin/sh", "-c", "exit 0"}, Policy: p})
	packaging := ""
	switch {
	case err != nil:
		err = idMapCause(err)
		info := policy.Describe(err)
		c.Detail, c.Fix = info.Message, info.Fix
		var u *policy.UnsupportedError
		if errors.As(err, &u) {
			c.Detail = u.Control + ": " + u.Reason
		}
		if info.Stage == "init binary" {
			packaging = info.Message
			c.Fix = "build airlock, airlock-init and airlock-spawn together with scripts/build, and keep them side by side"
		}
	case res.Status != nsjail.StatusOK:
		c.Detail = fmt.Sprintf("status %s: %s%s", res.Status, res.Error, res.Stderr)
	default:
		c.OK = true
		init := "this binary"
		if initPath, _ := helpers(); initPath != "" {
			init = initPath
		}
		c.Detail = fmt.Sprintf("namespaces %s, rootfs %s, seccomp %s (%d rules), limits %s, init %s, pid 1 %s, %d ms",
			strings.Join(res.Enforced.Namespaces, ","), res.Enforced.Rootfs, res.Enforced.Seccomp, res.Enforced.SeccompRules, res.Enforced.Limits, init, res.Enforced.Pid1, res.WallTimeMS)
	}
	return c, langs, packaging
}

// idMapCause gives the kernel's refusal of the sandbox's namespaces its
// real cause when airlock runs as uid 0 of a user namespace that does not
// map the sandbox's host uid (unmappedID): user namespaces work there, so
// "enable user namespaces" would be the wrong fix.
func idMapCause(err error) error {
	var u *policy.UnsupportedError
	if !errors.As(err, &u) || u.Check != policy.CheckUserNS {
		return err
	}
	why, fix := unmappedID()
	if why == "" {
		return err
	}
	return &policy.UnsupportedError{Control: u.Control, Check: u.Check, Reason: why + "; the kernel refused the sandbox's id map", Fix: fix}
}

// unmappedID names the cause when airlock runs as uid 0 of a user
// namespace (unshare -Ur, a rootless container) that does not map the
// unprivileged host uid a root-started sandbox runs as: user namespaces
// work, but that uid cannot be mapped from here. "" when that is not so.
func unmappedID() (why, fix string) {
	if os.Geteuid() != 0 {
		return "", ""
	}
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return "", ""
	}
	const sandboxUID = 65534
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var inside, outside, count int64
		if n, _ := fmt.Sscan(line, &inside, &outside, &count); n == 3 && inside <= sandboxUID && sandboxUID < inside+count {
			return "", ""
		}
	}
	return fmt.Sprintf("airlock runs as uid 0 of a user namespace that does not map uid %d, the unprivileged id a sandbox started by root runs as (uid_map: %s)", sandboxUID, strings.Join(strings.Fields(string(b)), " ")),
		"run airlock as a non-root user in this namespace (it then maps its own uid), or map a range that includes 65534 (e.g. unshare --map-auto or newuidmap with a subordinate range)"
}
