package executor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// One program per language: print hello, its arguments, a line of stdin
// and the JSON input's "n", then exit 3.
var programs = map[string]string{
	"python": `import sys, os, json
d = json.load(open(os.environ["AIRLOCK_INPUT"]))
print("hello", " ".join(sys.argv[1:]), sys.stdin.readline().strip(), d["n"])
sys.exit(3)`,
	"node": `const fs = require("fs");
const d = JSON.parse(fs.readFileSync(process.env.AIRLOCK_INPUT, "utf8"));
const line = fs.readFileSync(0, "utf8").split("\n")[0];
console.log("hello", process.argv.slice(2).join(" "), line, d.n);
process.exit(3);`,
	"bash": `read -r line; n=$(sed -n 's/.*"n": *\([0-9]*\).*/\1/p' "$AIRLOCK_INPUT"); echo hello "$*" "$line" "$n"; exit 3`,
	"sh":   `read -r line; n=$(sed -n 's/.*"n": *\([0-9]*\).*/\1/p' "$AIRLOCK_INPUT"); echo hello "$*" "$line" "$n"; exit 3`,
	"perl": `my $l = <STDIN>; chomp $l; open(my $f, '<', $ENV{AIRLOCK_INPUT}); my $j = do { local $/; <$f> };
my ($n) = $j =~ /"n":\s*(\d+)/; print "hello @ARGV $l $n\n"; exit 3;`,
	"ruby": `require "json"; d = JSON.parse(File.read(ENV["AIRLOCK_INPUT"])); l = STDIN.gets.chomp
puts "hello #{ARGV.join(" ")} #{l} #{d["n"]}"; exit 3`,
	"php": `<?php $d = json_decode(file_get_contents(getenv("AIRLOCK_INPUT")), true); $l = trim(fgets(STDIN));
echo "hello " . implode(" ", array_slice($argv, 1)) . " $l " . $d["n"] . "\n"; exit(3);`,
	"lua": `local f = io.open(os.getenv("AIRLOCK_INPUT")); local j = f:read("a"); local n = j:match('"n":%s*(%d+)')
print("hello " .. table.concat(arg, " ") .. " " .. io.read("l") .. " " .. n); os.exit(3)`,
}

// required are the languages this project must run on every CI host.
var required = map[string]bool{"python": true, "node": true, "bash": true, "sh": true}

// Every language of the table: hello, argv, stdin, exit code and JSON
// input; a language whose interpreter is missing is ErrUnsupported.
func TestLanguages(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	runLanguages(t, ex, policy.Policy{}, nil)
	if _, err := ex.Execute(t.Context(), executor.Request{Language: "cobol", Code: "x"}); !errors.Is(err, executor.ErrInvalid) {
		t.Errorf("unknown language: %v", err)
	}
	if _, err := ex.Execute(t.Context(), executor.Request{Language: "python", Code: "x", Args: []string{"true"}}); !errors.Is(err, executor.ErrInvalid) {
		t.Errorf("Args and Language together: %v", err)
	}
	if _, err := ex.Execute(t.Context(), executor.Request{Language: "python", Code: "x", Input: []byte("{nope")}); !errors.Is(err, executor.ErrInvalid) {
		t.Errorf("bad JSON input: %v", err)
	}
	caps := ex.Capabilities()
	if caps.Backend != "namespaces" || !caps.Filesystem || !caps.Network || !caps.Sessions || len(caps.Languages) < 4 {
		t.Errorf("capabilities %+v", caps)
	}
}

// runLanguages runs every language of the table under pol: hello, argv,
// stdin, exit code and JSON input, then check (if any) on each result; a
// language whose interpreter is missing is ErrUnsupported.
func runLanguages(t *testing.T, ex *executor.Executor, pol policy.Policy, check func(*testing.T, *executor.Result)) {
	t.Helper()
	for name, code := range programs {
		t.Run(name, func(t *testing.T) {
			req := executor.Request{Language: name, Code: code, Argv: []string{"a", "b c"},
				Stdin: strings.NewReader("from stdin\nsecond line\n"), Input: []byte(`{"n": 42}`), Policy: pol}
			if !ex.SupportsLanguage(name) {
				if required[name] {
					testutil.RequireFeature(t, name, false)
				}
				if _, err := ex.Execute(t.Context(), req); !errors.Is(err, executor.ErrUnsupported) {
					t.Fatalf("%s is not installed, yet Execute said %v", name, err)
				}
				return
			}
			res, err := ex.Execute(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != nsjail.StatusExited || res.ExitCode != 3 || res.Stdout != "hello a b c from stdin 42\n" || res.Language != name {
				t.Fatalf("status %s exit %d language %q\nstdout %q\nstderr %q", res.Status, res.ExitCode, res.Language, res.Stdout, res.Stderr)
			}
			if check != nil {
				check(t, res)
			}
		})
	}
}
