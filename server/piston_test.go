package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

type pistonRun struct {
	Stdout, Stderr, Output string
	Code                   *int
	Signal, Message        *string
	Status                 *string
	Memory, CPUTime        *int64
}

type pistonResp struct {
	Language, Version string
	Run               pistonRun
	Message           string
}

// Piston's routes answer in Piston's shapes (engineer-man/piston
// api/src/api/v2.js), for its own clients.
func TestPiston(t *testing.T) {
	// A minute, not 5 s: the runs below that must end on their own start
	// python or bash first, which the loaded emulated guest can take
	// seconds to do.
	e := start(t, 1, func(c *server.Config) { c.Policy.Timeout = policy.Duration(time.Minute) })
	code, _, b := e.do(t, "GET", "/api/v2/runtimes", "")
	var rts []struct {
		Language, Version, Runtime string
		Aliases                    []string
	}
	if code != 200 || json.Unmarshal(b, &rts) != nil || len(rts) == 0 {
		t.Fatalf("runtimes: %d %s", code, b)
	}
	byLang := map[string]string{}
	for _, rt := range rts {
		if rt.Aliases == nil || rt.Version == "" {
			t.Fatalf("runtime %+v: Piston clients need aliases and a version", rt)
		}
		byLang[rt.Language] = rt.Version + "/" + rt.Runtime
	}
	if !strings.HasPrefix(byLang["python"], "3.") || !strings.HasSuffix(byLang["javascript"], "/node") {
		t.Fatalf("runtimes %v", byLang)
	}
	exec := func(body string) (int, pistonResp) {
		t.Helper()
		code, _, b := e.do(t, "POST", "/api/v2/execute", body, "Content-Type", "text/plain;charset=UTF-8")
		var r pistonResp
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %s", body, b)
		}
		return code, r
	}
	code, r := exec(`{"language":"py","version":"3","files":[{"name":"a.py","content":"import sys; print(sys.stdin.read(), sys.argv[1:], open('data.txt').read())"},{"name":"data.txt","content":"NQ==","encoding":"base64"}],"stdin":"in","args":["1","2"],"compile_timeout":10000,"run_timeout":60000,"compile_memory_limit":-1,"run_memory_limit":-1}`)
	if code != 200 || r.Language != "python" || r.Run.Stdout != "in ['1', '2'] 5\n" || r.Run.Output != r.Run.Stdout ||
		r.Run.Code == nil || *r.Run.Code != 0 || r.Run.Signal != nil || r.Run.Status != nil || r.Run.Memory == nil {
		t.Fatalf("python: %d %+v", code, r)
	}
	code, r = exec(`{"language":"bash","version":"*","files":[{"content":"echo out; echo err >&2; exit 2"}]}`)
	if code != 200 || r.Run.Output != "out\nerr\n" || *r.Run.Code != 2 || *r.Run.Status != "RE" || !strings.Contains(*r.Run.Message, "status 2") {
		t.Fatalf("exit 2: %+v", r.Run)
	}
	code, r = exec(`{"language":"bash","version":"*","files":[{"content":"sleep 10"}],"run_timeout":200}`)
	if code != 200 || r.Run.Code != nil || *r.Run.Signal != "SIGKILL" || *r.Run.Status != "TO" {
		t.Fatalf("timeout: %+v", r.Run)
	}
	code, r = exec(`{"language":"python","version":"*","files":[{"content":"import os; os.abort()"}]}`)
	if code != 200 || r.Run.Code != nil || r.Run.Signal == nil || *r.Run.Status != "SG" {
		t.Fatalf("signal: %+v", r.Run)
	}
	for _, c := range []struct{ body, msg string }{
		{`{"version":"*","files":[]}`, "language is required as a string"},
		{`{"language":"python","version":5,"files":[]}`, "version is required as a string"},
		{`{"language":"python","version":"*"}`, "files is required as an array"},
		{`{"language":"python","version":"*","files":[{"content":1}]}`, "files[0].content is required as a string"},
		{`{"language":"cobol","version":"*","files":[{"content":""}]}`, "cobol-* runtime is unknown"},
		{`{"language":"python","version":"2.7","files":[{"content":""}]}`, "python-2.7 runtime is unknown"},
		{`{"language":"python","version":"*","files":[{"content":"","encoding":"base64"}]}`, "at least one utf8"},
		{`{"language":"python","version":"*","files":[{"content":""}],"run_timeout":"1"}`, "run_timeout must be a number"},
		{`{"language":"python","version":"*","files":[{"content":""}],"run_timeout":600000}`, "run_timeout cannot exceed the configured limit of 60000"},
		{`{"language":"python","version":"*","files":[{"content":""}],"run_memory_limit":1e12}`, "run_memory_limit cannot exceed"},
		{`not json`, "a JSON object is required"},
	} {
		code, r := exec(c.body)
		if code != 400 || !strings.Contains(r.Message, c.msg) {
			t.Errorf("%s: %d %q, want 400 with %q", c.body, code, r.Message, c.msg)
		}
	}
	if m := e.metric(t, `airlock_runs_total{kind="piston",status="error`); m != "" {
		t.Fatalf("a refused Piston request ran: %s", m)
	}
}
