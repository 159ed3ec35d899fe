package executor_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// A session's files without running anything (the hooks airlock serve
// uses): written and read back; what the program planted (a link out, a
// FIFO) is neither followed, opened nor replaced; a closed session says so.
func TestSessionFileHooks(t *testing.T) {
	testutil.RequireUserNS(t)
	work := testutil.WorldReadableDir(t)
	ex, err := executor.New(executor.Config{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	s, err := ex.NewSession(executor.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile("d/in.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	res, err := s.Execute(t.Context(), executor.Request{Args: []string{"sh", "-c", "cat d/in.txt > out.txt; ln -s /etc/passwd link; mkfifo fifo"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	if data, size, err := s.ReadFile("out.txt", 3); err != nil || string(data) != "hel" || size != 5 {
		t.Fatalf("ReadFile capped: %q %d %v", data, size, err)
	}
	for _, name := range []string{"link", "fifo", "d"} {
		if _, _, err := s.ReadFile(name, 100); !errors.Is(err, policy.ErrInvalid) {
			t.Errorf("ReadFile(%s): %v, want ErrInvalid", name, err)
		}
	}
	if _, _, err := s.ReadFile("missing", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, _, err := s.ReadFile("../x", 100); !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("../x: %v", err)
	}
	if err := s.WriteFile("link", []byte("x")); !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("WriteFile over a link: %v", err)
	}
	files, err := s.Files(executor.FileLimits{})
	if err != nil || len(files) != 4 {
		t.Fatalf("Files: %v %+v", err, files)
	}
	if s.Closed() {
		t.Fatal("open session says closed")
	}
	s.Close()
	if _, _, err := s.ReadFile("out.txt", 1); err == nil || !s.Closed() {
		t.Fatalf("closed session: %v", err)
	}
	langs := ex.Languages()
	if len(langs) == 0 || !ex.SupportsLanguage(langs[0].Name) {
		t.Fatalf("Languages: %+v", langs)
	}
	if _, err := ex.Language("cobol"); !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("Language(cobol): %v", err)
	}
}
