package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// `airlock mcp` as a process over stdio (this test binary as the CLI,
// driven by the Go SDK's client): it runs code and keeps a session;
// closing its stdin ends it with exit 0, its sessions' workspaces
// removed.
func TestMCPStdio(t *testing.T) {
	testutil.RequireUserNS(t)
	dir := serveDir(t)
	work := filepath.Join(dir, "work")
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "mcp", "--work-dir", work, "--max-concurrent", "2", "--pool", "0")
	cmd.Env = []string{"AIRLOCK_TEST_AS_CLI=1", "PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir}
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, &stderr)
	}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v\n%s", name, err, res, &stderr)
		}
		out, _ := res.StructuredContent.(map[string]any)
		return out
	}
	if out := call("run_code", map[string]any{"language": "sh", "code": "echo hi"}); out["stdout"] != "hi\n" {
		t.Fatalf("run_code: %v", out)
	}
	id, _ := call("session_open", nil)["session"].(string)
	call("write_file", map[string]any{"session": id, "path": "f", "content": "kept"})
	if out := call("session_run", map[string]any{"session": id, "command": "cat f"}); out["stdout"] != "kept" {
		t.Fatalf("session_run: %v", out)
	}
	// Close ends stdin, and waits for the process (TerminateDuration).
	if err := cs.Close(); err != nil {
		t.Fatalf("exit: %v\n%s", err, &stderr)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("exit status %v\n%s", cmd.ProcessState, &stderr)
	}
	ents, _ := os.ReadDir(work)
	for _, e := range ents {
		if e.Name() != ".lock" {
			t.Errorf("left in the work dir: %s", e.Name())
		}
	}
	if strings.Contains(stderr.String(), "kept") {
		t.Errorf("payload data in the log:\n%s", &stderr)
	}
}
