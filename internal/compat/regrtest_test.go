package compat_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// python is the interpreter whose test suite runs: Debian's, by absolute
// path (a pyenv shim or /usr/local python on the PATH has no testsuite).
const python = "/usr/bin/python3"

// outcome is a test case's result, as unittest names it.
type outcome string

const (
	passed  outcome = "ok"
	skipped outcome = "skipped"
	failed  outcome = "FAIL"
	errored outcome = "ERROR"
	notRun  outcome = "not run" // absent from a run that has it elsewhere
)

// bad reports whether o is a failure of the case.
func (o outcome) bad() bool { return o == failed || o == errored }

// worse reports whether inside's outcome is a regression from bare's:
// a case that passed must pass; one that was skipped must not fail.
func worse(bare, inside outcome) bool {
	switch bare {
	case passed:
		return inside != passed
	case skipped:
		return inside.bad() || inside == notRun
	}
	return false // failing or absent bare: not judged
}

// caseResult is one test case's outcome and, when it did not pass, the
// first line of the reason (the exception, or the skip's reason).
type caseResult struct {
	Outcome outcome
	Msg     string
}

// run is one run of a command, bare or inside.
type run struct {
	Where   string // "bare" or "inside"
	Status  string // "exit 0", "exit 2", "signal SIGKILL", "timeout", ...
	Exit    int    // exit code; -1 when killed or not run
	Summary string // regrtest's "Tests result: ..." line
	Cases   map[string]caseResult
	Crashed string        // why there is no per-case report, "" when there is
	Log     []byte        // stdout and stderr, interleaved
	Wall    time.Duration // wall time
}

// counts returns the numbers of passed, skipped and failed cases.
func (r *run) counts() (ok, skip, bad int) {
	for _, c := range r.Cases {
		switch {
		case c.Outcome == passed:
			ok++
		case c.Outcome == skipped:
			skip++
		case c.Outcome.bad():
			bad++
		}
	}
	return
}

// regrtestArgs is the command line that runs module with the per-case
// report in xmlPath, only the cases in match if any.
func regrtestArgs(m module, xmlPath string, match []string) []string {
	args := []string{python, "-m", "test", "-v", "--junit-xml", xmlPath,
		"--timeout", fmt.Sprint(int(m.caseBudget().Seconds()))}
	args = append(args, m.Args...)
	for _, id := range match {
		args = append(args, "--match", id)
	}
	return append(args, m.Name)
}

// junitCase is a <testcase> of regrtest's --junit-xml report
// (test/support/testresult.py). A case whose subtests failed has no name
// (its addSuccess never came); the log's FAIL blocks name it.
type junitCase struct {
	Name    string    `xml:"name,attr"`
	Skipped *string   `xml:"skipped"`
	Failure *junitErr `xml:"failure"`
	Error   *junitErr `xml:"error"`
}

type junitErr struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
}

// parseJUnit reads the cases of a --junit-xml report.
func parseJUnit(data []byte) (map[string]caseResult, error) {
	cases := map[string]caseResult{}
	d := xml.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("junit report: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local == "testsuites" || se.Name.Local == "testsuite" {
			n++
		}
		if se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := d.DecodeElement(&c, &se); err != nil {
			return nil, fmt.Errorf("junit report: %w", err)
		}
		if c.Name == "" {
			continue
		}
		r := caseResult{Outcome: passed}
		switch {
		case c.Error != nil:
			r = caseResult{errored, firstLine(c.Error.Message)}
		case c.Failure != nil:
			r = caseResult{failed, firstLine(c.Failure.Message)}
		case c.Skipped != nil:
			r = caseResult{skipped, firstLine(*c.Skipped)}
		}
		cases[c.Name] = r
	}
	if n == 0 {
		return nil, errors.New("junit report: no testsuite element")
	}
	return cases, nil
}

// failHead is the first line of unittest's report of one failure, after
// a line of 70 "=": "FAIL: " or "ERROR: ", the method and the case id,
// and for a subtest its parameters.
var failHead = regexp.MustCompile(`^(FAIL|ERROR): (\S+) \(([\w.]+)\)(.*)$`)

var (
	sepEq   = strings.Repeat("=", 70)
	sepDash = strings.Repeat("-", 70)
)

// parseFailures reads the failure reports of a verbose log: the cases a
// junit report leaves nameless (failed subtests), class and module
// fixtures ("setUpClass (test.test_x.C)" becomes test.test_x.C.setUpClass),
// each with the last line of its traceback.
func parseFailures(log []byte) map[string]caseResult {
	out := map[string]caseResult{}
	lines := strings.Split(string(log), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] != sepEq {
			continue
		}
		m := failHead.FindStringSubmatch(lines[i+1])
		if m == nil {
			continue
		}
		kind, meth, id := m[1], m[2], m[3]
		if !strings.HasSuffix(id, "."+meth) {
			id += "." + meth
		}
		// The traceback runs from the "-" line after the header to the
		// next separator; its last line is the exception.
		j := i + 2
		for j < len(lines) && lines[j] != sepDash {
			j++
		}
		msg := ""
		for j++; j < len(lines) && lines[j] != sepEq && lines[j] != sepDash; j++ {
			if l := strings.TrimSpace(lines[j]); l != "" {
				msg = l
			}
		}
		o := failed
		if kind == "ERROR" {
			o = errored
		}
		msg = clip(msg)
		if sub := strings.TrimSpace(m[4]); sub != "" {
			msg = "subtest " + sub + ": " + msg
		}
		if prev, ok := out[id]; ok && prev.Outcome == errored {
			continue // an error wins over a subtest's failure
		}
		out[id] = caseResult{o, msg}
	}
	return out
}

// caseLine matches the start of a case in a verbose log.
var caseLine = regexp.MustCompile(`(?m)^(\w+) \((test\.[\w.]+)\)`)

// lastStarted returns the id of the last case a verbose log started.
func lastStarted(log []byte) string {
	all := caseLine.FindAllSubmatch(log, -1)
	if len(all) == 0 {
		return ""
	}
	return string(all[len(all)-1][2])
}

// summaryLine is regrtest's last verdict line.
var summaryLine = regexp.MustCompile(`(?m)^Tests result: (.*)$`)

// finish fills r's cases from its junit report and log.
func (r *run) finish(report []byte, reportErr error) {
	if m := summaryLine.FindAllSubmatch(r.Log, -1); len(m) > 0 {
		r.Summary = string(m[len(m)-1][1])
	}
	cases, err := parseJUnit(report)
	if reportErr != nil {
		err = reportErr
	}
	if err != nil {
		r.Crashed = err.Error()
		if last := lastStarted(r.Log); last != "" {
			r.Crashed += "; last case started: " + last
		}
		cases = map[string]caseResult{}
	}
	for id, c := range parseFailures(r.Log) {
		cases[id] = c
	}
	r.Cases = cases
}

// syncBuffer is a bytes.Buffer safe for the two output copiers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// env is the environment of both runs, as the default policy gives it
// (PATH, HOME, LANG) plus TMPDIR and TZ, set on both sides.
func env(home, tmp string) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8", "TMPDIR=" + tmp, "TZ=UTC"}
}

// bare runs args in a fresh directory (cwd and HOME, TMPDIR below it)
// with files written there first, as this process's user, in a process
// group of its own that is killed when it ends (stray children included).
// It returns the run and the directory, which t removes. It may run on a
// goroutine of its own: a failure to set up is reported with t.Errorf
// and a run with no report.
func bare(t *testing.T, args []string, files map[string][]byte, budget time.Duration) (*run, string) {
	t.Helper()
	setupErr := func(err error) (*run, string) {
		t.Errorf("bare %q: %v", args, err)
		return &run{Where: "bare", Exit: -1, Status: "error", Crashed: err.Error()}, ""
	}
	dir, err := os.MkdirTemp("", "airlock-compat-bare-")
	if err != nil {
		return setupErr(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, ".tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return setupErr(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return setupErr(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()
	var out syncBuffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env(dir, tmp), &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	r := &run{Where: "bare", Exit: -1}
	start := time.Now()
	err = cmd.Run()
	r.Wall = time.Since(start)
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind
	}
	r.Log = out.Bytes()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && t.Context().Err() == nil:
		r.Status = "timeout"
	case err == nil:
		r.Status, r.Exit = "exit 0", 0
	case errors.As(err, &ee) && ee.Exited():
		r.Exit = ee.ExitCode()
		r.Status = fmt.Sprint("exit ", r.Exit)
	case errors.As(err, &ee):
		r.Status = "signal " + unix.SignalName(ee.Sys().(syscall.WaitStatus).Signal())
	default:
		return setupErr(err)
	}
	return r, dir
}

// limits raises the default policy's limits for a test suite, and only
// them: the same namespaces, seccomp profile, filesystem and network.
// Without a cgroup (rootless on cgroup v1) explicit memory and task
// limits need best_effort, which then applies them as rlimits; the run
// checks (sameIsolation) that nothing else was relaxed.
func limits(t *testing.T, p *policy.Policy, budget time.Duration) {
	p.Timeout = policy.Duration(budget)
	p.Memory = 2 << 30
	p.Pids = 1024
	if _, ok := testutil.Cgroups(t); !ok {
		p.BestEffort = policy.DegradeLimits
	}
}

// inside runs args in a sandbox under the default policy with limits
// raised, files written to /workspace first, and returns the run and the
// files the program left in /workspace.
func inside(t *testing.T, args []string, files map[string][]byte, budget time.Duration) (*run, []executor.File) {
	t.Helper()
	p := policy.Default()
	limits(t, &p, budget)
	p.Setenv = map[string]string{"TMPDIR": "/tmp", "TZ": "UTC"}
	var out syncBuffer
	req := executor.Request{
		Args: args, Policy: p, Files: files, Stdout: &out, Stderr: &out,
		CollectFiles: true,
		FileLimits:   executor.FileLimits{MaxFiles: 50, MaxFileBytes: 64 << 20, MaxTotal: 128 << 20, MaxDepth: 4},
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget+time.Minute)
	defer cancel()
	start := time.Now()
	res, err := sandbox(t).Execute(ctx, req)
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("inside %q: %v", args, err)
	}
	sameIsolation(t, &res.Enforced)
	r := &run{Where: "inside", Exit: -1, Log: out.Bytes(), Wall: wall}
	switch res.Status {
	case nsjail.StatusOK, nsjail.StatusExited:
		r.Exit = res.ExitCode
		r.Status = fmt.Sprint("exit ", r.Exit)
	case nsjail.StatusSignaled:
		r.Status = "signal " + res.Signal
	default:
		r.Status = string(res.Status)
		if res.Error != nil {
			r.Status += ": " + res.Error.String()
		}
	}
	return r, res.Files
}

// fileData returns the named file of a run's collected files.
func fileData(files []executor.File, name string) ([]byte, error) {
	for _, f := range files {
		if f.Path == name {
			if f.Skipped != "" || f.Truncated {
				return nil, fmt.Errorf("%s: not collected whole (%s, %d bytes)", name, f.Skipped, f.Size)
			}
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("%s: not written", name)
}

// regrtest runs a module's cases (all, or only those in match) bare or
// inside, with its junit report written to the cwd (regrtest writes it
// relative to the directory it started in).
func regrtest(t *testing.T, where string, m module, match []string) *run {
	t.Helper()
	args := regrtestArgs(m, "result.xml", match)
	var r *run
	var data []byte
	var err error
	if where == "bare" {
		var dir string
		if r, dir = bare(t, args, nil, m.budget()); dir == "" {
			return r // not set up; t has the error
		}
		data, err = os.ReadFile(filepath.Join(dir, "result.xml"))
	} else {
		var files []executor.File
		r, files = inside(t, args, nil, m.budget())
		data, err = fileData(files, "result.xml")
	}
	r.finish(data, err)
	return r
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s)
}

// clip shortens s to a line of at most 160 bytes.
func clip(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
	if len(s) > 160 {
		return strings.ToValidUTF8(s[:157], "") + "..."
	}
	return s
}
