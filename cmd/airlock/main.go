// Command airlock runs untrusted programs in a namespace sandbox.
//
//	airlock run [flags] -- PROGRAM [ARGS...]
//
// It is a thin flag layer over the executor package; see README.md.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

func main() {
	// The re-exec hook: in a sandbox init this never returns.
	nsjail.Init()
	phases.mark("main")
	code := process(os.Args[1:])
	abandonEarly()
	phases.write()
	os.Exit(code)
}

// process is the CLI as a process of its own: main, and the test binary
// when it stands in for airlock (TestMain).
func process(args []string) int {
	// One P: a run's supervision is a few goroutines that mostly wait
	// (the init's exit, its status socket, output pipes, the timeout), and
	// with a second P every wake-up also wakes an idle thread to spin for
	// work that is not there. Measured over 400 interleaved runs of
	// `airlock run -- /bin/true`: -1.0 ms of CPU and -0.5 ms of wall time
	// per run. Library callers keep their own setting.
	runtime.GOMAXPROCS(1)
	return cli(args)
}

const usage = `usage: airlock COMMAND [flags]

commands:
  run [flags] -- PROGRAM [ARGS...]   run a program in a sandbox
  exec --lang L [-c CODE | FILE | -] [flags] [ARGS...]
                                     run source code in a sandbox
  doctor [--json]                    what this host can enforce, and how to fix the rest
  posture [run flags] [--json]       what a sandbox under these flags looks like from inside
  policy show|validate|compile [NAME|FILE]
                                     inspect a policy and its seccomp filter
  serve [--listen ADDR] [flags]      the executor over HTTP: warm pool, sessions, Piston API
  mcp [--listen ADDR] [flags]        the executor for agents over MCP (stdio, or streamable HTTP)
  sandbox create|exec|ps|ls|logs|kill|rm|cp
                                     live sandboxes of a running airlock serve (docker-like)
  help [COMMAND]                     this text, or a command's usage and flags
  version                            airlock's version, commit, Go, libseccomp, build token
  completion bash|zsh                a shell completion script

Run 'airlock help run' for the flags.
`

// cli runs one command and returns the process exit code.
func cli(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitSetup
	}
	if err := checkCaller(); err != nil {
		return (&reporter{json: jsonAsked(args[1:]), stdout: os.Stdout, stderr: os.Stderr}).fail(err)
	}
	if delegated(args[0]) {
		return usageError(os.Stdout, os.Stderr, daemonExec(args[0], args[1:], "airlock "+args[0], "this airlock compiles no seccomp filters and runs that binary for "+args[0]))
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "exec":
		return execCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "doctor":
		return doctorCmd(args[1:], os.Stdout, os.Stderr)
	case "policy":
		return policyCmd(args[1:], os.Stdout, os.Stderr)
	case "posture":
		return postureCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "serve":
		return serveCmd(args[1:], os.Stdout, os.Stderr)
	case "mcp":
		return mcpCmd(args[1:], os.Stdout, os.Stderr)
	case "sandbox":
		return sandboxCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "help", "-h", "--help":
		return helpCmd(args[1:], os.Stdout, os.Stderr)
	case "version", "--version":
		if len(args) > 1 {
			if args[1] == "--help" || args[1] == "-h" {
				return helpCmd([]string{"version"}, os.Stdout, os.Stderr)
			}
			return usageError(os.Stdout, os.Stderr, policy.Invalid(args[0], "takes no arguments, got %q; usage: airlock version", args[1]))
		}
		return versionCmd(os.Stdout)
	case "completion":
		return completionCmd(args[1:], os.Stdout, os.Stderr)
	case manCommand: // hidden: scripts/release's man pages (manpage.go)
		return manCmd(args[1:], os.Stdout, os.Stderr)
	}
	return usageError(os.Stdout, os.Stderr, unknownCommand(args[0]))
}

// unknownCommand is the error for a command airlock does not have, with
// the closest one when it looks like a typo.
func unknownCommand(name string) error {
	hint := ""
	if c := closest(name, commands); c != "" {
		hint = " (did you mean " + c + "?)"
	}
	return policy.Invalid("command", "unknown command %q%s; the commands: %s (airlock help)", name, hint, strings.Join(commands, ", "))
}
