package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/airlock-sandbox/airlock/executor"
)

// execFlagSet is exec's flag set: the run flags, --lang and -c.
func execFlagSet(stderr io.Writer) (*flag.FlagSet, *runFlags, *string, *string) {
	fs, f := runFlagSet("exec", "usage: airlock exec --lang L [-c CODE | FILE | -] [flags] [ARGS...]", stderr)
	lang := fs.String("lang", "", "the language: python, node, bash, sh, ... (see airlock doctor)")
	code := fs.String("c", "", "the program's source `code`")
	return fs, f, lang, code
}

// execCmd implements `airlock exec --lang L [-c CODE | FILE | -] [ARGS...]`:
// the code is written into /workspace as a file and run by the language's
// interpreter, with ARGS as its arguments. Same flags and result as run.
func execCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, f, lang, code := execFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	src, programStdin := *code, stdin
	switch {
	case *lang == "":
		fs.Usage()
		return 2
	case *code != "":
	case len(rest) > 0 && rest[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "airlock: reading the code from stdin: %v\n", err)
			return exitSetup
		}
		src, rest, programStdin = string(b), rest[1:], nil
	case len(rest) > 0:
		b, err := os.ReadFile(rest[0])
		if err != nil {
			fmt.Fprintf(stderr, "airlock: %v\n", err)
			return exitSetup
		}
		src, rest = string(b), rest[1:]
	default:
		fs.Usage()
		return 2
	}
	p, err := f.policy()
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return exitSetup
	}
	return runRequest(executor.Request{Language: *lang, Code: src, Argv: rest, Policy: p, Stdin: programStdin}, f.json, f.verbose, stdout, stderr)
}
