package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// commit is the VCS commit airlock was built from, set by scripts/build
// (-X main.commit=...): Go's own VCS stamp is missing where the build
// runs with -buildvcs=false or outside a checkout.
var commit string

// release and commitDate are set by scripts/release (-X main.release=...
// -X main.commitDate=...): the release's version, printed in place of the
// module's, and the commit's date (not the build's: a rebuild of the
// commit prints, and is, the same). scripts/build sets commitDate too.
var release, commitDate string

// commands are airlock's commands, in the order help lists them.
var commands = []string{"run", "exec", "doctor", "posture", "policy", "serve", "mcp", "sandbox", "help", "version", "completion"}

// versionCmd prints what identifies this build: airlock's module version,
// the VCS commit it was built from (with -dirty for uncommitted changes),
// the Go toolchain, the libseccomp it compiles filters with ("none" for a
// build without cgo, which refuses seccomp policies) and its build token
// (what pairs it with an airlock-init built beside it; "none" for a plain
// go build).
func versionCmd(stdout io.Writer) int {
	version, vcs, goVersion := "devel", "", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			rev = rev[:min(12, len(rev))] + dirty
		}
		vcs = rev
	}
	if commit != "" {
		vcs = commit
	}
	if release != "" {
		version = release
	}
	if commitDate != "" {
		vcs += " " + commitDate
	}
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	fmt.Fprintf(stdout, "airlock %s\ncommit: %s\ngo: %s\nlibseccomp: %s\nbuild token: %s\n",
		version, or(vcs, "unknown"), goVersion, or(seccomp.LibraryVersion(), "none (built without cgo)"), or(nsjail.BuildToken(), "none"))
	return 0
}

// helpCmd implements `airlock help [COMMAND]`: the usage of one command
// (its flags included) on stdout, exit 0.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) > 1 {
		return usageError(stdout, stderr, policy.Invalid("help", "takes one COMMAND, got %d arguments; usage: airlock help [COMMAND]", len(args)))
	}
	if fs := commandFlags(args[0], stdout); fs != nil {
		fs.Usage()
		return 0
	}
	switch args[0] {
	case "policy":
		fmt.Fprint(stdout, policyUsage)
	case "help":
		fmt.Fprintln(stdout, "usage: airlock help [COMMAND]\n\nPrints the usage of COMMAND, or the list of commands.")
	case "version":
		fmt.Fprintln(stdout, "usage: airlock version (or airlock --version)\n\nPrints airlock's version, commit, Go and libseccomp versions and build token.")
	case "completion":
		fmt.Fprint(stdout, completionUsage)
	case "sandbox":
		fmt.Fprintln(stdout, sandboxUsage)
	default:
		return usageError(stdout, stderr, unknownCommand(args[0]))
	}
	return 0
}

// commandFlags is the flag set of a command that has flags (run, exec,
// posture, serve, doctor), printing to w; nil for the others.
func commandFlags(name string, w io.Writer) *flag.FlagSet {
	switch name {
	case "run":
		fs, _ := runFlagSet("run", runUsage, w)
		return fs
	case "exec":
		fs, _, _, _ := execFlagSet(w)
		return fs
	case "posture":
		fs, _ := runFlagSet("posture", postureUsage, w)
		return fs
	case "serve":
		fs, _, _ := serveFlagSet(w)
		return fs
	case "mcp":
		fs, _, _, _ := mcpFlagSet(w)
		return fs
	case "doctor":
		fs, _ := doctorFlagSet(w)
		return fs
	}
	return nil
}

const completionUsage = `usage: airlock completion bash|zsh

Prints a completion script. To use it:
  bash: source <(airlock completion bash)      (or save it in /etc/bash_completion.d/airlock)
  zsh:  source <(airlock completion zsh)       (it loads zsh's bashcompinit)
`

// completionCmd prints a bash or zsh completion script for the commands
// and their flags, generated from the same flag sets the commands parse.
func completionCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprint(stdout, completionUsage)
			return 0
		}
		return usageError(stdout, stderr, policy.Invalid("completion", "want one shell, bash or zsh, got %q; usage: airlock completion bash|zsh", strings.Join(args, " ")))
	}
	var b strings.Builder
	if args[0] == "zsh" {
		// zsh runs the bash completion through bashcompinit, which needs
		// compinit's compdef.
		b.WriteString("#compdef airlock\n(( $+functions[compdef] )) || { autoload -U +X compinit && compinit -u; }\nautoload -U +X bashcompinit && bashcompinit\n")
	}
	b.WriteString("# airlock completion (airlock completion " + args[0] + ")\n_airlock() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} i\n")
	// After "--" come the program and its arguments: file names.
	b.WriteString("  for ((i = 1; i < COMP_CWORD; i++)); do [[ ${COMP_WORDS[i]} == -- ]] && { COMPREPLY=($(compgen -f -- \"$cur\")); return; }; done\n")
	fmt.Fprintf(&b, "  if ((COMP_CWORD == 1)); then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(append(slices.Clone(commands), "--version"), " "))
	b.WriteString("  case $cmd in\n")
	for _, name := range commands {
		var words []string
		if fs := commandFlags(name, io.Discard); fs != nil {
			fs.VisitAll(func(f *flag.Flag) {
				if len(f.Name) == 1 {
					words = append(words, "-"+f.Name)
				} else {
					words = append(words, "--"+f.Name)
				}
			})
		}
		switch name {
		case "policy":
			words = []string{"show", "validate", "compile"}
		case "doctor":
			words = []string{"--json"}
		case "help":
			words = commands
		case "completion":
			words = []string{"bash", "zsh"}
		}
		if len(words) > 0 {
			fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", name, strings.Join(words, " "))
		}
	}
	b.WriteString("  esac\n  [[ ${#COMPREPLY[@]} -gt 0 || $cur == -* ]] || COMPREPLY=($(compgen -f -- \"$cur\"))\n}\ncomplete -F _airlock airlock\n")
	if args[0] == "zsh" {
		// Installed in zsh's fpath (the Debian package's
		// vendor-completions/_airlock), this file is loaded by the first
		// completion of airlock, which it must then also answer: else
		// that first Tab only loads it. Sourced, it is no completion.
		b.WriteString("if [[ -n ${compstate[context]-} ]]; then _bash_complete -F _airlock; fi\n")
	}
	fmt.Fprint(stdout, b.String())
	return 0
}
