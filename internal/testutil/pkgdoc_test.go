package testutil

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Every package has exactly one package doc comment (in doc.go, or in
// main.go for a command).
func TestEveryPackageHasOneDoc(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		// The rootless pass may not be able to read the checkout; the
		// root pass checks it.
		t.Skipf("source tree not readable here: %v", err)
	}
	n := 0
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		docs := map[string][]string{} // package name -> files with a doc
		for _, e := range ents {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				return err
			}
			if _, ok := docs[f.Name.Name]; !ok {
				docs[f.Name.Name] = nil
			}
			if f.Doc != nil {
				docs[f.Name.Name] = append(docs[f.Name.Name], name)
			}
		}
		for pkg, files := range docs {
			n++
			if len(files) != 1 {
				t.Errorf("%s (package %s): package doc in %v, want exactly one file", dir, pkg, files)
			}
		}
		return nil
	})
	if err != nil || n < 7 {
		t.Fatalf("walked %d packages: %v", n, err)
	}
}
