package doctest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

const (
	// runMarker, on the line before a fenced sh block, makes the block a
	// test (see the package doc).
	runMarker = "<!-- doctest -->"
	// outputPrefix starts a line of a block's expected standard output.
	outputPrefix = "#>"
	// maxReadmeLines keeps the README an introduction (about 150 lines):
	// details go to docs/.
	maxReadmeLines = 173
)

// shellBlock is a README block the test runs.
type shellBlock struct {
	line   int
	script string
	want   []string // expected stdout lines, "..." matching any text
}

// readmeShellBlocks returns the marked sh blocks of README.md, and fails t
// for an unmarked sh block in the Quick start section or a section with
// none marked: a command a reader copies is a command the tests ran.
func readmeShellBlocks(t *testing.T, root string) []shellBlock {
	t.Helper()
	blocks, prose := scan(readLines(t, filepath.Join(root, "README.md")))
	start, end, ok := sectionRange(prose, "Quick start")
	if !ok {
		t.Fatal(`README.md has no "## Quick start" section`)
	}
	var out []shellBlock
	inQuickStart := 0
	for _, b := range blocks {
		isShell := b.info == "sh" || b.info == "bash" || b.info == "shell" || b.info == "console"
		inSection := b.line > start && b.line < end
		marked := b.marker == runMarker
		switch {
		case marked && !isShell:
			t.Errorf("README.md:%d: %s before a %q block: only sh blocks can be run", b.line, runMarker, b.info)
			continue
		case !marked && isShell && inSection:
			t.Errorf("README.md:%d: a shell block in Quick start without %s: every command there must be run by this test", b.line, runMarker)
			continue
		case !marked:
			continue
		}
		if inSection {
			inQuickStart++
		}
		sb := shellBlock{line: b.line}
		var script []string
		for _, l := range b.lines {
			if rest, ok := strings.CutPrefix(l, outputPrefix); ok {
				sb.want = append(sb.want, strings.TrimPrefix(rest, " "))
				continue
			}
			script = append(script, l)
		}
		sb.script = strings.Join(script, "\n") + "\n"
		out = append(out, sb)
	}
	if inQuickStart == 0 {
		t.Fatalf("README.md: no %s sh block in Quick start", runMarker)
	}
	return out
}

// outputMatches compares a block's stdout with its #> lines.
func outputMatches(got string, want []string) bool {
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	if len(lines) != len(want) {
		return false
	}
	for i, w := range want {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(w), regexp.QuoteMeta("..."), ".*") + "$"
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			return false
		}
	}
	return true
}

// Every command block of the README's quick start runs, against the
// airlock scripts/build made, and prints what the README says it prints.
func TestReadmeQuickStart(t *testing.T) {
	root := repoRoot(t)
	blocks := readmeShellBlocks(t, root)
	testutil.RequireUserNS(t)
	bin := testutil.BinDir(t)
	if _, err := os.Stat(filepath.Join(bin, "airlock")); err != nil {
		t.Fatalf("%s: %v (scripts/build makes airlock there)", testutil.BinDirEnv, err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			// As root the sandbox runs as host uid 65534: the directory
			// must be reachable by it.
			dir := testutil.WorldReadableDir(t)
			home := t.TempDir()
			// The blocks run as if in the repository: the Python client
			// is there at clients/python.
			copyClient(t, root, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "-e", "-o", "pipefail", "-c", b.script)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=/tmp", "LANG=C.UTF-8"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil || !outputMatches(stdout.String(), b.want) {
				t.Errorf("README.md:%d: the block %s\n--- script\n%s--- want stdout\n%s\n--- got stdout\n%s--- stderr\n%s",
					b.line, describe(err), b.script, strings.Join(b.want, "\n"), stdout.String(), stderr.String())
			}
		})
	}
}

func describe(err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return "printed something else"
}

// The README's Go snippet is executor's Example_readme (which the
// executor tests compile and run, output checked): its main, less the
// nsjail.Init line that TestMain makes, is the example's marked body.
func TestReadmeLibrarySnippet(t *testing.T) {
	root := repoRoot(t)
	blocks, _ := scan(readLines(t, filepath.Join(root, "README.md")))
	var snippet []string
	for _, b := range blocks {
		if b.info == "go" {
			if snippet != nil {
				t.Fatal("README.md has more than one go block; this test knows one")
			}
			snippet = b.lines
		}
	}
	if len(snippet) < 4 || snippet[0] != "func main() {" || !strings.HasPrefix(snippet[1], "\tnsjail.Init()") || snippet[len(snippet)-1] != "}" {
		t.Fatalf("README.md's go block should be a main whose first statement is nsjail.Init(); got:\n%s", strings.Join(snippet, "\n"))
	}
	body := snippet[2 : len(snippet)-1]
	if len(body) > 0 && body[0] == "" {
		body = body[1:]
	}

	example := readLines(t, filepath.Join(root, "executor", "example_readme_test.go"))
	begin, end := -1, -1
	for i, l := range example {
		switch strings.TrimSpace(l) {
		case "// README.md begins":
			begin = i + 1
		case "// README.md ends":
			end = i
		}
	}
	if begin < 0 || end < begin {
		t.Fatal("executor/example_readme_test.go lacks its // README.md begins / ends markers")
	}
	if got := example[begin:end]; strings.Join(got, "\n") != strings.Join(body, "\n") {
		t.Errorf("README.md's library snippet and executor's Example_readme differ; make them the same.\n--- README.md\n%s\n--- Example_readme\n%s",
			strings.Join(body, "\n"), strings.Join(got, "\n"))
	}
}

// The README stays an introduction; reference, numbers and internals
// belong in docs/.
func TestReadmeIsShort(t *testing.T) {
	root := repoRoot(t)
	if n := len(readLines(t, filepath.Join(root, "README.md"))); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move detail into docs/", n, maxReadmeLines)
	}
}

// copyClient copies the Python client's package,
// clients/python/src/airlock_client, from the repository root into dir,
// at the same relative path.
func copyClient(t *testing.T, root, dir string) {
	t.Helper()
	const rel = "clients/python/src/airlock_client"
	files, err := filepath.Glob(filepath.Join(root, rel, "*.py"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no %s/*.py", rel)
	}
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, rel), 0o755)
	}
	for _, f := range files {
		var b []byte
		if b, err = os.ReadFile(f); err == nil {
			err = os.WriteFile(filepath.Join(dir, rel, filepath.Base(f)), b, 0o644)
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
