package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

func execCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	testutil.RequireUserNS(t)
	var out, errb bytes.Buffer
	code := execCmd(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestExecCommand(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	if code, out, errOut := execCLI(t, "in\n", "--lang", "python", "-c", "import sys; print(sys.argv[1:], input())", "a", "b"); code != 0 || out != "['a', 'b'] in\n" {
		t.Errorf("-c: exit %d %q %q", code, out, errOut)
	}
	src := filepath.Join(t.TempDir(), "prog.sh")
	os.WriteFile(src, []byte(`echo "file $1"; exit 5`), 0o644)
	if code, out, _ := execCLI(t, "", "--lang", "bash", src, "x"); code != 5 || out != "file x\n" {
		t.Errorf("FILE: exit %d %q", code, out)
	}
	if code, out, _ := execCLI(t, `echo "from stdin $1"`, "--lang", "sh", "-", "y"); code != 0 || out != "from stdin y\n" {
		t.Errorf("-: exit %d %q", code, out)
	}
	code, out, _ := execCLI(t, "", "--json", "--timeout", "500ms", "--lang", "node", "-c", "for(;;){}")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 137 || res["status"] != "timeout" || res["language"] != "node" {
		t.Errorf("--json: exit %d %v %s", code, err, out)
	}
	if code, _, errOut := execCLI(t, "", "--lang", "cobol", "-c", "x"); code != exitSetup || !strings.Contains(errOut, "cobol") {
		t.Errorf("unknown language: exit %d %q", code, errOut)
	}
	if code, _, _ := execCLI(t, "", "-c", "x"); code != exitSetup {
		t.Errorf("no --lang: exit %d", code)
	}
}
