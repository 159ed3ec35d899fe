package compat_test

import (
	"maps"
	"slices"
	"testing"
)

// A report as regrtest writes it: a pass, a skip, a failure, an error,
// and a case left nameless by a failing subtest.
const sampleJUnit = `<testsuites tests="5" errors="1" failures="1"><testsuite start="x" tests="5" errors="1" failures="1">
<testcase name="test.test_x.A.test_ok" status="run" result="completed" time="0.1" />
<testcase name="test.test_x.A.test_skip" status="run" result="completed" time="0"><skipped>needs root</skipped></testcase>
<testcase name="test.test_x.A.test_fail" status="run" result="completed" time="0"><system-out /><failure type="AssertionError" message="AssertionError: 1 != 2&#10;">Traceback...</failure></testcase>
<testcase name="test.test_x.B.test_err" status="run" result="completed" time="0"><error type="OSError" message="OSError: [Errno 22] Invalid argument&#10;">Traceback...</error></testcase>
<testcase />
</testsuite></testsuites>`

// The verbose log's failure blocks for the same run, plus a failing
// subtest and a class fixture's error.
const sampleLog = `test_ok (test.test_x.A.test_ok) ... ok
test_sub (test.test_x.A.test_sub) ... 
======================================================================
FAIL: test_fail (test.test_x.A.test_fail)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "x.py", line 1, in test_fail
AssertionError: 1 != 2

======================================================================
FAIL: test_sub (test.test_x.A.test_sub) (user=65534)
----------------------------------------------------------------------
Traceback (most recent call last):
OSError: [Errno 22] Invalid argument

======================================================================
ERROR: setUpClass (test.test_x.C)
----------------------------------------------------------------------
Traceback (most recent call last):
PermissionError: [Errno 1] Operation not permitted

----------------------------------------------------------------------
Ran 6 tests in 0.010s

FAILED (failures=2, errors=1)
Tests result: FAILURE
`

func TestParseRun(t *testing.T) {
	r := &run{Log: []byte(sampleLog)}
	r.finish([]byte(sampleJUnit), nil)
	want := map[string]caseResult{
		"test.test_x.A.test_ok":    {passed, ""},
		"test.test_x.A.test_skip":  {skipped, "needs root"},
		"test.test_x.A.test_fail":  {failed, "AssertionError: 1 != 2"},
		"test.test_x.B.test_err":   {errored, "OSError: [Errno 22] Invalid argument"},
		"test.test_x.A.test_sub":   {failed, "subtest (user=65534): OSError: [Errno 22] Invalid argument"},
		"test.test_x.C.setUpClass": {errored, "PermissionError: [Errno 1] Operation not permitted"},
	}
	if !maps.Equal(r.Cases, want) {
		t.Errorf("cases:\n got %v\nwant %v", r.Cases, want)
	}
	if r.Summary != "FAILURE" || r.Crashed != "" {
		t.Errorf("summary %q, crashed %q", r.Summary, r.Crashed)
	}

	// No report (the run died): the log still names the failures and
	// the last case started.
	r = &run{Log: []byte("test_a (test.test_x.A.test_a) ... ok\ntest_b (test.test_x.A.test_b) ... Fatal Python error: Segmentation fault\n")}
	r.finish(nil, nil)
	if r.Crashed != "junit report: no testsuite element; last case started: test.test_x.A.test_b" {
		t.Errorf("crashed: %q", r.Crashed)
	}
}

func TestCompare(t *testing.T) {
	b := &run{Cases: map[string]caseResult{
		"a": {passed, ""}, "b": {passed, ""}, "c": {skipped, ""}, "d": {skipped, ""}, "e": {failed, ""}, "f": {passed, ""},
	}}
	in := &run{Cases: map[string]caseResult{
		"a": {passed, ""}, "b": {skipped, "no pty"}, "c": {errored, "EINVAL"}, "d": {passed, ""}, "e": {errored, ""}, "g": {failed, ""},
	}}
	diffs, bareBad := compare(b, in)
	var ids []string
	for _, d := range diffs {
		ids = append(ids, d.ID)
	}
	// b: ok -> skipped; c: skipped -> error; f: ok -> not run; g: a
	// failure inside only. a and d are as good or better; e fails bare.
	if want := []string{"b", "c", "f", "g"}; !slices.Equal(ids, want) || bareBad != 1 {
		t.Errorf("diffs %v (want %v), bare failures %d (want 1)", ids, want, bareBad)
	}
}

func TestExceptionMatch(t *testing.T) {
	c := &cause{Name: "x"}
	exact := &exception{Case: "test.test_x.A.test_a", cause: c}
	class := &exception{Case: "test.test_x.A.*", cause: c}
	for id, w := range map[string][2]bool{
		"test.test_x.A.test_a":  {true, true},
		"test.test_x.A.test_b":  {false, true},
		"test.test_x.AB.test_a": {false, false},
	} {
		if got := [2]bool{exact.matches(id), class.matches(id)}; got != w {
			t.Errorf("%s: matches %v, want %v", id, got, w)
		}
	}
}
