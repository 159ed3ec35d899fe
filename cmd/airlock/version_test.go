package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// --version names the build: version, commit, Go, libseccomp (this test
// binary has cgo) and the build token; the scripts/build binary has a
// real commit and a token (the one its airlock-init shares).
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := versionCmd(&out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	re := regexp.MustCompile(`^airlock \S+\ncommit: \S+( \d{4}-\d\d-\d\dT\S+)?\ngo: go1\.\d+\S*\nlibseccomp: \d+\.\d+\.\d+\nbuild token: \S+\n$`)
	if !re.MatchString(out.String()) {
		t.Fatalf("version output:\n%s", out.String())
	}
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	if s := string(b); !re.MatchString(s) || strings.Contains(s, "commit: unknown") || strings.Contains(s, "build token: none") {
		t.Fatalf("scripts/build's airlock --version:\n%s", s)
	}
}

// help COMMAND prints that command's usage on stdout and exits 0, for
// every command; an unknown one exits 2 naming the commands.
func TestHelpCommand(t *testing.T) {
	for _, name := range commands {
		var out, errb bytes.Buffer
		if code := helpCmd([]string{name}, &out, &errb); code != 0 || errb.Len() > 0 {
			t.Errorf("help %s: exit %d, stderr %q", name, code, errb.String())
		}
		if !strings.HasPrefix(out.String(), "usage: airlock "+name) {
			t.Errorf("help %s: %q", name, out.String())
		}
	}
	var out, errb bytes.Buffer
	helpCmd([]string{"run"}, &out, &errb)
	for _, flag := range []string{"-timeout", "-memory", "-ro-bind", "-json"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("help run lacks %s", flag)
		}
	}
	out.Reset()
	// Misuse is an invalid request: 125 and the retry hint, as run's.
	for _, args := range [][]string{{"nope"}, {"run", "exec"}} {
		errb.Reset()
		if code := helpCmd(args, &out, &errb); code != exitSetup || !strings.Contains(errb.String(), "do not retry: fix the request") {
			t.Errorf("help %q: exit %d, %q", args, code, errb.String())
		}
	}
	errb.Reset()
	helpCmd([]string{"rnu"}, &out, &errb)
	if !strings.Contains(errb.String(), "did you mean run") || !strings.Contains(errb.String(), "run, exec") {
		t.Errorf("help rnu: %q", errb.String())
	}
}

// The completion scripts complete commands, each command's flags (from
// the flag sets the commands parse) and, after "--", file names; driven
// through bash's and zsh's own completion machinery.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	for _, shell := range []string{"bash", "zsh"} {
		var out, errb bytes.Buffer
		if code := completionCmd([]string{shell}, &out, &errb); code != 0 {
			t.Fatalf("completion %s: exit %d %s", shell, code, errb.String())
		}
		os.WriteFile(filepath.Join(dir, "airlock."+shell), out.Bytes(), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "file-to-run.py"), nil, 0o644)
	bash := testutil.RequireBinary(t, "bash")
	complete := func(words ...string) string {
		script := `source airlock.bash; COMP_WORDS=(` + strings.Join(words, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _airlock; echo "${COMPREPLY[*]}"`
		cmd := exec.Command(bash, "--norc", "-c", script)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion of %q: %v: %s", words, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	for words, want := range map[string]string{
		"airlock r":               "run",
		"airlock --ver":           "--version",
		"airlock run --ti":        "--timeout",
		"airlock run --ro":        "--ro-bind",
		"airlock exec -c":         "-c",
		"airlock exec --la":       "--lang",
		"airlock policy va":       "validate",
		"airlock completion z":    "zsh",
		"airlock help po":         "posture policy",
		"airlock run -- file-to":  "file-to-run.py",
		"airlock run --json file": "file-to-run.py",
	} {
		if got := complete(strings.Fields(words)...); got != want {
			t.Errorf("bash: %q completes to %q, want %q", words, got, want)
		}
	}
	zsh := testutil.RequireBinary(t, "zsh")
	cmd := exec.Command(zsh, "-f", "-c", `source airlock.zsh; setopt ksharrays; COMP_WORDS=(airlock run --ti); COMP_CWORD=2; _airlock; print -r -- ${_comps[airlock]}; print -r -- "${COMPREPLY[*]}"`)
	cmd.Dir, cmd.Env = dir, []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	b, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err != nil || len(lines) != 2 || lines[0] != "_bash_complete -F _airlock" || !strings.Contains(lines[1], "--timeout") {
		t.Fatalf("zsh completion: %v: %s", err, b)
	}
}
