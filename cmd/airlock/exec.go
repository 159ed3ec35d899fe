package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

const execUsage = `usage: airlock exec --lang L [-c CODE | FILE | -] [flags] [ARGS...]

Runs source code in a sandbox: the code is written into /workspace and
run by the language's interpreter (airlock doctor lists the languages
this host can run), with ARGS as its arguments. Flags, exit status and
the --json result are run's (airlock run --help).

Example: airlock exec --lang python -c 'print(1)'

flags:`

// execFlagSet is exec's flag set: the run flags, --lang and -c.
func execFlagSet(out io.Writer) (*flag.FlagSet, *runFlags, *string, *string) {
	fs, f := runFlagSet("exec", execUsage, out)
	lang := fs.String("lang", "", "the language: python, node, bash, sh, perl (airlock doctor lists those installed here)")
	code := fs.String("c", "", "the program's source `code`")
	return fs, f, lang, code
}

// execCmd implements `airlock exec --lang L [-c CODE | FILE | -] [ARGS...]`:
// the code is written into /workspace as a file and run by the language's
// interpreter, with ARGS as its arguments. Same flags and result as run.
func execCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &reporter{json: jsonAsked(args), stdout: stdout, stderr: stderr, daemon: append([]string{"exec"}, args...)}
	fs, f, lang, code := execFlagSet(stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		if err == errHelp {
			return 0
		}
		return o.fail(err)
	}
	o.json, o.verbose = f.json, f.verbose
	rest := fs.Args()
	if handsOverInput() && (readOnce(f.policyFile) || !f.given("c") && len(rest) > 0 && readOnce(rest[0])) {
		return o.fail(daemonExec("exec", args, "airlock exec", "this airlock runs that binary for code or a policy it can read only once"))
	}
	src, programStdin := *code, stdin
	switch {
	case *lang == "":
		return o.fail(policy.Invalid("--lang", "missing: say which language the code is in; example: airlock exec --lang python -c 'print(1)'"))
	case f.given("c") && *code == "":
		return o.fail(policy.Invalid("-c", "the code is empty; example: -c 'print(1)'"))
	case f.given("c"):
	case len(rest) > 0 && rest[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return o.fail(policy.Invalid("code", "reading the code from stdin: %v", err))
		}
		src, rest, programStdin = string(b), rest[1:], nil
	case len(rest) > 0:
		b, err := os.ReadFile(rest[0])
		if err != nil {
			return o.fail(policy.Invalid("FILE", "%v", err))
		}
		src, rest = string(b), rest[1:]
	default:
		return o.fail(policy.Invalid("code", "no code: give -c CODE, a FILE, or - to read it from stdin"))
	}
	p, err := f.policy()
	if err != nil {
		return o.fail(err)
	}
	req := executor.Request{Language: strings.ToLower(*lang), Code: src, Argv: rest, Policy: p, Stdin: programStdin}
	return f.run(req, o)
}

// langError names the flag in the executor's refusals: --lang for a
// language it does not know, --workspace for exec's (which makes its own).
func langError(err error) error {
	var ie *policy.InvalidError
	if errors.As(err, &ie) {
		switch ie.Field {
		case "language":
			return &policy.InvalidError{Field: "--lang", Reason: ie.Reason + " (aliases: python3, py, js, javascript)"}
		case "workspace":
			return &policy.InvalidError{Field: "--workspace", Reason: ie.Reason}
		}
	}
	return err
}
