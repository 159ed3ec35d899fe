package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseNetRule(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"pypi.org", "pypi.org"},
		{"PyPI.org.", "pypi.org"},
		{"*.pythonhosted.org:443", "*.pythonhosted.org:443"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8:1000-2000", "10.0.0.0/8:1000-2000"},
		{"0.0.0.0/0:443", "0.0.0.0/0:443"},
		{"fd00::1", "fd00::1"},
		{"[fd00::/8]:80", "[fd00::/8]:80"},
		{"[::1]:9000", "[::1]:9000"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
	} {
		r, err := ParseNetRule(c.in)
		if err != nil || r.String() != c.want {
			t.Errorf("ParseNetRule(%q) = %q, %v; want %q", c.in, r.String(), err, c.want)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"", "empty rule"},
		{"*.", "no suffix"},
		{"*", "not a host name"},
		{"a.*.com", "wildcard"},
		{"0.0.0.0/0", "every address"},
		{"::/0", "every address"},
		{"example.com:70000", "1-65535"},
		{"example.com:0", "1-65535"},
		{"example.com:", "empty port"},
		{"example.com:90-80", "empty"},
		{":80", "no host"},
		{"[::1", "[IPv6]"},
		{"exa mple.com", "character"},
	} {
		_, err := ParseNetRule(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseNetRule(%q) = %v; want an error saying %q", c.in, err, c.says)
		}
	}
}

func TestNetRuleMatch(t *testing.T) {
	r, _ := ParseNetRule("*.example.com")
	if !r.MatchName("a.example.com") || !r.MatchName("b.a.example.com") || r.MatchName("example.com") || r.MatchName("badexample.com") {
		t.Error("wildcard matches wrong names")
	}
	if !r.HasPort(443, false) || !r.HasPort(80, false) || r.HasPort(22, false) || !r.HasPort(22, true) {
		t.Error("default ports: 80 and 443 to allow, all to deny")
	}
	r, _ = ParseNetRule("example.com:8000-8002")
	if !r.HasPort(8001, false) || r.HasPort(443, false) || r.HasPort(8003, true) {
		t.Error("port range")
	}
}

func TestPolicyNetObject(t *testing.T) {
	p, err := Parse([]byte(`{"net": {"allow": ["pypi.org", "127.0.0.1:8080"], "deny": ["10.0.0.0/8"], "max_connections": 4, "max_bytes": "1MiB", "idle_timeout": "5s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Net != NetAllow || len(p.Egress.Allow) != 2 || p.Egress.Deny[0] != "10.0.0.0/8" || p.Egress.MaxBytes != 1<<20 {
		t.Fatalf("parsed %+v %+v", p.Net, p.Egress)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"net":{"allow":["pypi.org","127.0.0.1:8080"],"deny":["10.0.0.0/8"]`) {
		t.Errorf("marshalled %s", b)
	}
	q, err := Parse(b)
	if err != nil || q.Net != NetAllow || q.Egress.MaxConnections != 4 {
		t.Fatalf("round trip: %+v %v", q.Egress, err)
	}
	// The string form stays a string.
	h, err := Parse([]byte("net: host\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(h); !strings.Contains(string(b), `"net":"host"`) {
		t.Errorf("host marshalled %s", b)
	}
	// As a field of another document, strictly.
	var doc struct{ Policy Policy }
	if err := json.Unmarshal([]byte(`{"Policy": {"net": {"allow": ["a.b"]}}}`), &doc); err != nil || doc.Policy.Net != NetAllow {
		t.Fatalf("embedded: %v %+v", err, doc.Policy)
	}
	if err := json.Unmarshal([]byte(`{"Policy": {"nett": "host"}}`), &doc); err == nil {
		t.Error("unknown field accepted in an embedded policy")
	}
}

func TestPolicyNetErrors(t *testing.T) {
	for _, c := range []struct{ doc, field, says string }{
		{`{"net": {"allow": []}}`, "net.allow", "no rule"},
		{`{"net": {"allow": ["*."]}}`, "net.allow[0]", "no suffix"},
		{`{"net": {"allow": ["ok.com", "0.0.0.0/0"]}}`, "net.allow[1]", "every address"},
		{`{"net": {"allow": ["a.com:70000"]}}`, "net.allow[0]", "1-65535"},
		{`{"net": {"allow": ["a.com"], "deny": ["*."]}}`, "net.deny[0]", "no suffix"},
		{`{"net": {"allow": ["a.com"], "max_connections": -1}}`, "net.max_connections", "negative"},
		{`{"net": {"allow": ["a.com"], "bogus": 1}}`, "net", "bogus"},
		{`{"net": 5}`, "net", "none, loopback, host"},
		{`{"net": {"allow": "pypi.org"}}`, "net.allow", "a string cannot be a list"},
		{`{"net": {"allow": ["a.b"], "max_connections": "many"}}`, "net.max_connections", "a string cannot be a whole number"},
		{`{"net": "wide"}`, "net", "none, loopback, host, allow"},
	} {
		_, err := Parse([]byte(c.doc))
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Field != c.field || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (field %q); want field %q saying %q", c.doc, err, fieldOf(ie), c.field, c.says)
		}
	}
	p := Default()
	p.Egress.Allow = []string{"a.com"}
	if err := p.Validate(); err == nil {
		t.Error("rules without net allow accepted")
	}
}

func fieldOf(ie *InvalidError) string {
	if ie == nil {
		return ""
	}
	return ie.Field
}

func TestProcessBackendRefusesNetAllow(t *testing.T) {
	p := Default()
	p.Net, p.Egress.Allow, p.Backend, p.BestEffort = NetAllow, []string{"a.com"}, "process", DegradeNetwork
	unmet, _, _, _ := processUnmet(p, false, &Host{})
	for _, u := range unmet {
		if u.Field == "net" && u.Required {
			return
		}
	}
	t.Error("net allow on the process backend is waivable")
}

func TestNetAllowWeakeningsAndLimits(t *testing.T) {
	p := Default()
	p.Net, p.Egress.Allow = NetAllow, []string{"pypi.org", "127.0.0.1:8080"}
	if w := strings.Join(p.Weakenings(), "; "); !strings.Contains(w, "net: allow pypi.org,127.0.0.1:8080") {
		t.Errorf("weakenings %q", w)
	}
	if c, b, i := p.Egress.Limits(); c != DefaultMaxConnections || b != DefaultMaxBytes || i != DefaultIdleTimeout {
		t.Errorf("default limits %d %d %s", c, b, i)
	}
	p.Egress.MaxConnections, p.Egress.MaxBytes = 3, 1000
	if c, b, _ := p.Egress.Limits(); c != 3 || b != 1000 {
		t.Errorf("limits %d %d", c, b)
	}
}
