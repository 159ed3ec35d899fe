package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The man pages (airlock __man, scripts/release) have one page per
// command and the top page, each naming every flag its command parses,
// with the version and date asked for in the title line.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := manCmd([]string{dir, "1.2.3", "2026-01-02"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, name := range append([]string{""}, commands...) {
		page := "airlock"
		if name != "" {
			page += "-" + name
		}
		b, err := os.ReadFile(filepath.Join(dir, page+".1"))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if want := `.TH ` + strings.ToUpper(manEscape(page)) + ` 1 "2026-01-02" "airlock 1.2.3"`; !strings.Contains(text, want+" ") {
			t.Errorf("%s: no title line %s", page, want)
		}
		if fs := commandFlags(name, io.Discard); name != "" && fs != nil {
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(text, `\fB\-`+map[bool]string{true: "", false: `\-`}[len(f.Name) == 1]+manEscape(f.Name)+`\fR`) {
					t.Errorf("%s lacks the flag %s", page, f.Name)
				}
			})
		}
	}
	if code := manCmd([]string{dir}, &out, &errb); code != exitSetup {
		t.Errorf("__man DIR alone: exit %d", code)
	}
}
