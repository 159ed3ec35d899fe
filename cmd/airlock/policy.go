package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
)

const policyUsage = `usage: airlock policy show|validate|compile [NAME|FILE]

  NAME is a preset (default); FILE is a policy (JSON or YAML) or an
  OCI/Docker seccomp profile (a JSON object with "defaultAction").
  show      print the resolved policy and its seccomp rules as JSON
  validate  check the policy and compile its filter; exit 0 if both work
  compile   print the seccomp filter: instruction count and disassembly
`

// policyCmd implements `airlock policy`.
func policyCmd(args []string, stdout, stderr io.Writer) int {
	if slices.Contains(args, "--help") || slices.Contains(args, "-h") {
		fmt.Fprint(stdout, policyUsage)
		return 0
	}
	// A usage error (no or an unknown subcommand, a flag, an extra
	// argument) is an invalid request: 125, as run's. Exit 1 is kept for
	// a policy found invalid, the answer validate is asked for.
	switch {
	case len(args) == 0:
		return usageError(stdout, stderr, policy.Invalid("policy", "no subcommand: give show, validate or compile; usage: airlock policy show|validate|compile [NAME|FILE]"))
	case !slices.Contains(policySubcommands, args[0]):
		return usageError(stdout, stderr, unknownSubcommand(args[0]))
	case len(args) > 2:
		return usageError(stdout, stderr, policy.Invalid("policy "+args[0], "takes one NAME or FILE, got %d arguments", len(args)-1))
	case len(args) == 2 && strings.HasPrefix(args[1], "-") && args[1] != "-":
		return usageError(stdout, stderr, policy.Invalid(args[1], "no such flag: airlock policy %s takes no flags, only a NAME or FILE (a file whose name starts with - is ./%s)", args[0], args[1]))
	}
	name := "default"
	if len(args) == 2 {
		name = args[1]
	}
	p, err := loadPolicy(name)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return 1
	}
	prof, err := seccomp.Resolve(p.Seccomp)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return 1
	}
	weakened, err := seccomp.Weakenings(p)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return 1
	}
	switch args[0] {
	case "show":
		out := struct {
			Policy   policy.Policy    `json:"policy"`
			Weakened []string         `json:"weakened"`
			Seccomp  *seccomp.Profile `json:"seccomp"`
		}{p, weakened, prof}
		if out.Weakened == nil {
			out.Weakened = []string{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return 0
	case "validate", "compile":
		if args[0] == "validate" {
			// Valid, and how it differs from the default where it is weaker.
			for _, w := range weakened {
				fmt.Fprintf(stdout, "weaker than the default policy: %s\n", w)
			}
		}
		if prof == nil {
			fmt.Fprintln(stdout, "valid; no seccomp filter (profile none)")
			return 0
		}
		// As the run compiles it: the jail's filter confines id changes
		// to the policy's inside ids.
		var ids *seccomp.IDs
		if p.Backend != "process" {
			uid, gid := p.InsideIDs()
			ids = &seccomp.IDs{UID: uint32(uid), GID: uint32(gid)}
		}
		prog, err := seccomp.Compile(prof, seccomp.Options{IDs: ids})
		if err != nil {
			fmt.Fprintf(stderr, "airlock: %v\n", err)
			return 1
		}
		if args[0] == "validate" {
			fmt.Fprintf(stdout, "valid; seccomp profile %s: %d rules, %d instructions\n", prof.Name, prof.RuleCount(), len(prog))
			return 0
		}
		fmt.Fprintf(stdout, "# seccomp profile %s: %d rules, %d BPF instructions (kill rules shown as KILL_PROCESS)\n", prof.Name, prof.RuleCount(), len(prog))
		fmt.Fprintln(stdout, strings.Join(seccomp.Disassemble(prog), "\n"))
		return 0
	}
	return usageError(stdout, stderr, unknownSubcommand(args[0]))
}

// policySubcommands are airlock policy's subcommands.
var policySubcommands = []string{"show", "validate", "compile"}

// unknownSubcommand is the error for a policy subcommand there is not
// (a flag too: policy has none), with the closest one.
func unknownSubcommand(name string) error {
	field, what := "policy", "subcommand"
	if strings.HasPrefix(name, "-") {
		field, what = name, "flag (policy has none)"
	}
	hint := ""
	if c := closest(strings.TrimLeft(name, "-"), policySubcommands); c != "" {
		hint = " (did you mean " + c + "?)"
	}
	return policy.Invalid(field, "no such %s: %q%s; usage: airlock policy show|validate|compile [NAME|FILE]", what, name, hint)
}

// loadPolicy reads a preset, a policy file (JSON or YAML), or a seccomp profile
// file (which becomes the default policy with that seccomp profile).
func loadPolicy(name string) (policy.Policy, error) {
	if _, err := os.Stat(name); err != nil && !strings.ContainsRune(name, '/') && !strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
		return policy.Preset(name)
	}
	// A file, read as run --policy reads it.
	return policyFile(name)
}
