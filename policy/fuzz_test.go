package policy

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics; it returns a policy or an ErrInvalid
// error, never both or neither; an accepted policy survives a JSON round
// trip unchanged and still validates.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"timeout": "2s", "memory": "64MiB", "pids": 8, "cpus": 0.5, "net": "loopback"}`,
		`{"mounts": [{"type": "ro-bind", "source": "/srv", "target": "/data"}, {"type": "tmpfs", "target": "/scratch", "size": "1M"}]}`,
		`{"seccomp": {"profile": "default", "rules": [{"names": ["getppid"], "action": "kill"}, {"names": ["socket"], "action": "allow", "args": [{"index": 0, "op": "masked_eq", "mask": 255, "value": 2}]}]}}`,
		`{"setenv": {"A": "b"}, "env_pass": ["HOME"], "best_effort": true, "backend": "process", "cpu_time": 1.5}`,
		`{"net": {"allow": ["pypi.org", "*.pythonhosted.org:443", "[fd00::/8]:80-90"], "deny": ["10.0.0.0/8"], "max_bytes": "1MiB", "idle_timeout": 5}}`,
		`{"net": {"allow": ["0.0.0.0/0"]}}`, `{"net": {"deny": ["a.b"]}}`,
		`{"timeout": -1}`, `{"memory": "lots"}`, `[]`, `null`, `{"mounts": [{"type": "bind", "target": "/proc"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			if !reflect.DeepEqual(p, Policy{}) {
				t.Fatalf("a policy with the error: %+v", p)
			}
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal an accepted policy: %v", err)
		}
		q, err := Parse(b)
		if err != nil {
			t.Fatalf("an accepted policy does not parse back: %v\n%s", err, b)
		}
		if b2, _ := json.Marshal(q); string(b) != string(b2) {
			t.Fatalf("round trip changed the policy:\n%s\n%s", b, b2)
		}
	})
}
