package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the checkout this package belongs to: found from this
// file's compile-time path, or from the working directory (go test and
// the suite's root pass run in the package's directory; a -trimpath
// build has no absolute file path). t is skipped when neither can be
// read: the rootless pass may not reach a private checkout, and the root
// pass checks it.
func repoRoot(t *testing.T) string {
	t.Helper()
	var tried []string
	_, file, _, _ := runtime.Caller(0)
	candidates := []string{filepath.Join(filepath.Dir(file), "..", "..")}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, filepath.Join(wd, "..", ".."))
	}
	for _, root := range candidates {
		if _, err := os.Stat(filepath.Join(root, "internal", "doctest", "doc.go")); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return root
	}
	t.Skipf("source tree not readable here (the root pass checks it): %s", strings.Join(tried, "; "))
	return ""
}

// docFiles are the documents the tests cover, relative to the root:
// README.md and docs/*.md.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", root, err)
	}
	rel := []string{"README.md"}
	for _, f := range files {
		rel = append(rel, filepath.Join("docs", filepath.Base(f)))
	}
	return rel
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// block is a fenced code block of a markdown file.
type block struct {
	info   string   // the info string: "sh", "go", ...
	line   int      // 1-based line of the opening fence
	lines  []string // the content
	marker string   // the previous non-blank line, e.g. "<!-- doctest -->"
}

var fence = regexp.MustCompile("^ {0,3}(```+|~~~+)\\s*(.*)$")

// scan splits a markdown file's lines into its fenced blocks and the
// lines outside them (code blocks blanked, so line numbers hold).
func scan(lines []string) (blocks []block, prose []string) {
	var cur *block
	var closer, prev string
	for i, l := range lines {
		if cur != nil {
			if strings.TrimSpace(l) == closer {
				blocks = append(blocks, *cur)
				cur = nil
			} else {
				cur.lines = append(cur.lines, l)
			}
			prose = append(prose, "")
			continue
		}
		if m := fence.FindStringSubmatch(l); m != nil {
			cur = &block{info: strings.TrimSpace(m[2]), line: i + 1, marker: prev}
			closer = m[1]
			prose = append(prose, "")
			continue
		}
		prose = append(prose, l)
		if strings.TrimSpace(l) != "" {
			prev = strings.TrimSpace(l)
		}
	}
	return blocks, prose
}

// slug is GitHub's anchor for a heading's text: lower case, spaces to
// hyphens, punctuation other than - and _ dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var heading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)

// anchors are the #fragments a file's headings give, numbered as GitHub
// numbers repeated headings (x, x-1, x-2).
func anchors(prose []string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// sectionRange finds the "## title" section of a file's prose: the
// 1-based lines of its heading and of the next "## " heading (or one past
// the end). A block at line n is in it when start < n < end.
func sectionRange(lines []string, title string) (start, end int, ok bool) {
	start = -1
	for i, l := range lines {
		if start < 0 && strings.TrimSpace(l) == "## "+title {
			start = i
			continue
		}
		if start >= 0 && strings.HasPrefix(l, "## ") {
			return start + 1, i + 1, true
		}
	}
	return start + 1, len(lines) + 1, start >= 0
}
