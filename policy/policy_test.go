package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFillsDefaultsAndReadsUnits(t *testing.T) {
	p, err := Parse([]byte(`{"timeout": "2s", "cpu_time": 1.5, "memory": "64MiB", "max_output": 4096, "net": "loopback"}`))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(p.Timeout) != 2*time.Second || time.Duration(p.CPUTime) != 1500*time.Millisecond ||
		p.Memory != 64<<20 || p.MaxOutput != 4096 || p.PidsLimit() != DefaultPids || p.Chdir != "/workspace" || p.Net != NetLoopback {
		t.Fatalf("parsed %+v", p)
	}
}

func TestParseRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":    `{"timeuot": "1s"}`,
		"trailing data":    `{} {}`,
		"bad duration":     `{"timeout": "soon"}`,
		"bad size":         `{"memory": "lots"}`,
		"negative timeout": `{"timeout": "-1s"}`,
		"tiny memory":      `{"memory": 100}`,
		"bad net":          `{"net": "bridge"}`,
		"relative chdir":   `{"chdir": "tmp"}`,
		"unclean chdir":    `{"chdir": "/tmp/../etc"}`,
		"bind to /":        `{"mounts": [{"type": "bind", "source": "/srv", "target": "/"}]}`,
		"bind over /proc":  `{"mounts": [{"type": "ro-bind", "source": "/srv", "target": "/proc/sys"}]}`,
		"bind over /dev":   `{"mounts": [{"type": "tmpfs", "target": "/dev"}]}`,
		"relative source":  `{"mounts": [{"type": "bind", "source": "srv", "target": "/srv"}]}`,
		"tmpfs source":     `{"mounts": [{"type": "tmpfs", "source": "/x", "target": "/srv"}]}`,
		"mount type":       `{"mounts": [{"type": "overlay", "target": "/srv"}]}`,
		"env name":         `{"setenv": {"A=B": "c"}}`,
		"pass name":        `{"env_pass": [""]}`,
		"relative ws":      `{"workspace": "ws"}`,
		"too few files":    `{"open_files": 3}`,
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{"0": 0, "4096": 4096, "1K": 1024, "64MiB": 64 << 20, "2 GB": 2 << 30, "512mb": 512 << 20, "7B": 7, "1T": 1 << 40, "2TiB": 2 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1P", "MiB", "9999999999999G", "9999999T"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	u := &UnsupportedError{Control: "cpus", Reason: "no cgroup", Fix: "run as root"}
	if !errors.Is(u, ErrUnsupported) || errors.Is(u, ErrInvalid) || !strings.Contains(u.Error(), "fix: run as root") {
		t.Errorf("UnsupportedError: %v", u)
	}
	if _, err := Preset("turbo"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown preset: %v", err)
	}
}

// A YAML document is the same policy as its JSON twin; YAML's own
// mistakes (duplicate keys, a non-mapping) and a field the policy does
// not have are refused as invalid.
func TestParseYAML(t *testing.T) {
	js, err := Parse([]byte(`{"timeout": "2s", "memory": "64MiB", "pids": 32, "net": "loopback",
		"setenv": {"A": "1"}, "mounts": [{"type": "ro-bind", "source": "/srv", "target": "/data"}],
		"seccomp": {"rules": [{"names": ["ptrace"], "action": "errno", "errno": 1}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	y, err := Parse([]byte(`# a comment
timeout: 2s
memory: 64MiB
pids: 32
net: loopback
setenv:
  A: "1"
mounts:
  - {type: ro-bind, source: /srv, target: /data}
seccomp:
  rules:
    - names: [ptrace]
      action: errno
      errno: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(js, y) {
		t.Fatalf("YAML and JSON differ:\n%+v\n%+v", y, js)
	}
	for name, doc := range map[string]string{
		"duplicate key": "timeout: 1s\ntimeout: 2s\n",
		"unknown field": "timeuot: 1s\n",
		"not a mapping": "- timeout\n",
		"a scalar":      "hello\n",
		"bad indent":    "timeout: 1s\n  memory: 1\n",
		"empty":         " \n",
	} {
		if _, err := Parse([]byte(doc)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

// Decoding errors speak of fields and kinds of values, with the line and
// column of a JSON mistake, never of Go types.
func TestParseErrorsNameFieldAndPlace(t *testing.T) {
	for doc, want := range map[string][]string{
		`{"pids": "many"}`:                           {"invalid pids:", "a string cannot be a whole number", "line 1, column"},
		"{\n  \"best_effort\": 1\n}":                 {"invalid best_effort:", "true or false, or a list"},
		"{\n  \"timeout\": \"1s\",\n  \"pids\" 3\n}": {"JSON syntax error at line 3, column", "invalid character"},
		`{"timeout": "1s"`:                           {"ends before its object closes", "line 1"},
		"pids: many\n":                               {"invalid pids:", "a string cannot be a whole number"},
		`{"mounts": {"type": "tmpfs"}}`:              {"invalid mounts:", "cannot be a list"},
		`{"pids": [1]}`:                              {"invalid pids:", "an array cannot be a whole number", "line 1, column 11"},
		`{"timeout": true}`:                          {"invalid timeout:", "a bool cannot be a duration"},
		`{"memory": {"a": 1}}`:                       {"invalid memory:", "an object cannot be a size"},
	} {
		_, err := Parse([]byte(doc))
		if err == nil {
			t.Errorf("%q: accepted", doc)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not say %q", doc, err, w)
			}
		}
		if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "policy.") || strings.Contains(err.Error(), "int64") {
			t.Errorf("%q: %q names Go types", doc, err)
		}
		// A value's own decoder gives no offset: no made-up position.
		if strings.Contains(err.Error(), "line 1, column 1 ") {
			t.Errorf("%q: %q points at the document's first byte", doc, err)
		}
	}
}

// Zero is never a silent default: a limit written as 0 is refused, naming
// the default that leaving it out gives; left out, it is the default.
func TestExplicitZeroRefused(t *testing.T) {
	for _, doc := range []string{`{"timeout": 0}`, `{"timeout": "0s"}`, `{"memory": 0}`, `{"memory": "0MiB"}`, `{"pids": 0}`,
		`{"max_output": 0}`, `{"cpus": 0}`, `{"kill_grace": "0s"}`, "pids: 0\n"} {
		_, err := Parse([]byte(doc))
		var ie *InvalidError
		if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "0 is not a limit") || !strings.Contains(ie.Reason, "default") {
			t.Errorf("%s: got %v, want a refusal naming the default", doc, err)
		}
	}
	p, err := Parse([]byte(`{"timeout": 5}`))
	if err != nil || time.Duration(p.Timeout) != 5*time.Second || time.Duration(p.KillGrace) != DefaultKillGrace {
		t.Errorf("bare seconds: %v %+v", err, p)
	}
}
