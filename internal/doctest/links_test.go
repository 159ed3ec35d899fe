package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// inlineLink is [text](target) or [text](target "title"); images too.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef is a reference definition: [label]: target
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// codeSpan is inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// htmlAnchor is an explicit anchor: <a id="x"> or <a name="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// link is one relative link found in a document.
type link struct {
	file   string // the document, relative to the root
	line   int
	target string
}

// relativeLinks returns the links of a document's prose that point into
// the repository (no scheme), outside code blocks and code spans.
func relativeLinks(file string, prose []string) []link {
	var out []link
	for i, l := range prose {
		l = codeSpan.ReplaceAllString(l, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		if m := refDef.FindStringSubmatch(l); m != nil {
			targets = append(targets, m[1])
		}
		for _, tg := range targets {
			if !scheme.MatchString(tg) {
				out = append(out, link{file, i + 1, tg})
			}
		}
	}
	return out
}

// Every relative link of README.md and docs/*.md names a file of the
// repository, and every #anchor a heading (or an explicit anchor) of the
// markdown file it points to.
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	anchorsOf := map[string]map[string]bool{} // by path relative to root
	loadAnchors := func(rel string) map[string]bool {
		if a, ok := anchorsOf[rel]; ok {
			return a
		}
		_, prose := scan(readLines(t, filepath.Join(root, rel)))
		a := anchors(prose)
		for _, l := range prose {
			for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
				a[m[1]] = true
			}
		}
		anchorsOf[rel] = a
		return a
	}
	checked := 0
	for _, doc := range docFiles(t, root) {
		_, prose := scan(readLines(t, filepath.Join(root, doc)))
		for _, l := range relativeLinks(doc, prose) {
			checked++
			where := fmt.Sprintf("%s:%d", l.file, l.line)
			path, frag, _ := strings.Cut(l.target, "#")
			rel := doc
			if path != "" {
				rel = filepath.Join(filepath.Dir(doc), path)
				if strings.HasPrefix(rel, "..") || filepath.IsAbs(path) {
					t.Errorf("%s: link %q leaves the repository (it breaks on GitHub and in a clone)", where, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					t.Errorf("%s: link %q: no such file %s", where, l.target, rel)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				t.Errorf("%s: link %q: an anchor into %s, which is not markdown", where, l.target, rel)
				continue
			}
			if !loadAnchors(rel)[frag] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", where, l.target, rel, frag)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d relative links found in README.md and docs/*.md: is the link scanner broken?", checked)
	}
	t.Logf("%d relative links checked", checked)
}

// Each docs/ file is one topic that opens with a title and a one-paragraph
// summary of it, before any list, table, code or subheading.
func TestDocsOpenWithSummary(t *testing.T) {
	root := repoRoot(t)
	for _, doc := range docFiles(t, root) {
		if doc == "README.md" {
			continue
		}
		lines := readLines(t, filepath.Join(root, doc))
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || lines[1] != "" {
			t.Errorf("%s: want a \"# Title\" line, then a blank line, then the summary", doc)
			continue
		}
		first := strings.TrimSpace(lines[2])
		for _, bad := range []string{"#", "|", "```", "- ", "* ", "1.", "<"} {
			if strings.HasPrefix(first, bad) {
				t.Errorf("%s: line 3 should start the summary paragraph, not %q", doc, first)
			}
		}
	}
}
