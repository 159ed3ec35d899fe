package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// Bad rules are refused before anything runs, naming the flag (or the
// policy field) and the rule.
func TestNetFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--net", "allow:"}, "--net: allow: names no rule"},
		{[]string{"--net", "allow:*."}, "--net: allow: rule \"*.\": the wildcard has no suffix"},
		{[]string{"--net", "allow:0.0.0.0/0"}, "--net: allow: rule \"0.0.0.0/0\" matches every address: give it a port"},
		{[]string{"--net", "allow:pypi.org:70000"}, "--net: allow: rule \"pypi.org:70000\": port \"70000\" is not a number in 1-65535"},
		{[]string{"--net", "allow:pypi.org,"}, "--net: allow: empty rule"},
		{[]string{"--net", "deny:"}, "--net: deny: names no rule"},
		{[]string{"--net", "host", "--net", "allow:pypi.org"}, "--net: allow:pypi.org cannot be combined with --net host"},
		{[]string{"--net", "allow:pypi.org", "--net", "host"}, "--net: host cannot be combined"},
		{[]string{"--net", "wide"}, "net: \"wide\" is not one of none, loopback, host, allow"},
	} {
		code, _, errOut := airlock(t, "", append(c.args, "--", "true")...)
		if code != exitSetup || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, exitSetup, c.says)
		}
	}
	pol := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(pol, []byte("net:\n  allow: [\"ok.example\", \"*.\"]\n"), 0o644)
	if code, _, errOut := airlock(t, "", "--policy", pol, "--", "true"); code != exitSetup || !strings.Contains(errOut, "net.allow[1]") {
		t.Errorf("policy file: exit %d, stderr %q", code, errOut)
	}
}

func TestNetFlagsMerge(t *testing.T) {
	var p policy.Policy
	p.Egress.Deny = []string{"10.0.0.0/8"}
	if err := netFlags(&p, []string{"allow:pypi.org,*.pythonhosted.org:443", "allow:127.0.0.1:8080", "deny:evil.pypi.org"}); err != nil {
		t.Fatal(err)
	}
	if p.Net != policy.NetAllow || strings.Join(p.Egress.Allow, " ") != "pypi.org *.pythonhosted.org:443 127.0.0.1:8080" ||
		strings.Join(p.Egress.Deny, " ") != "10.0.0.0/8 evil.pypi.org" {
		t.Errorf("%s %+v", p.Net, p.Egress)
	}
}

// --net allow end to end: the result's network list, and --verbose's
// stderr line for the refused connection.
func TestNetAllowCLI(t *testing.T) {
	curl := testutil.RequireBinary(t, "curl")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	script := fmt.Sprintf("%[1]s -sS --noproxy '' http://127.0.0.1:%[2]s/; %[1]s -sS --noproxy '' -o /dev/null -w ' %%{http_code}' http://127.0.0.1:1/", curl, port)
	code, out, errOut := airlock(t, "", "--verbose", "--net", "allow:127.0.0.1:"+port, "--", "sh", "-c", script)
	if code != 0 || out != "hi 403" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	if want := "airlock: net: http 127.0.0.1:1 denied: 127.0.0.1 is loopback (127.0.0.0/8) and no rule names it\n"; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q, want the line %q", errOut, want)
	}
	_, res, raw := result(t, "--net", "allow:127.0.0.1:"+port, "--", "sh", "-c", script)
	if len(res.Network) != 2 || res.Network[0].Verdict != "allowed" || !res.Network[1].Denied() || res.Enforced.Network != "allow" {
		t.Errorf("network %+v enforced %q", res.Network, res.Enforced.Network)
	}
	entry, _ := raw["network"].([]any)
	if len(entry) != 2 {
		t.Fatalf("JSON network: %v", raw["network"])
	}
	for _, k := range []string{"host", "port", "address", "protocol", "verdict", "bytes_up", "bytes_down", "duration_ms"} {
		if _, ok := entry[0].(map[string]any)[k]; !ok {
			t.Errorf("network entry lacks %q: %v", k, entry[0])
		}
	}
}

// posture under --net allow: the sandbox still has only lo (the proxy
// is its one way out, not an interface), the proxy variables are set,
// and the report names the egress mode.
func TestNetAllowPosture(t *testing.T) {
	r := postureJSON(t, "--net", "allow:pypi.org,127.0.0.1:8080")
	if !slices.Equal(r.Interfaces, []string{"lo"}) {
		t.Errorf("interfaces %v, want lo only", r.Interfaces)
	}
	for _, k := range []string{"HTTP_PROXY", "https_proxy", "ALL_PROXY", "NO_PROXY"} {
		if !slices.Contains(r.EnvNames, k) {
			t.Errorf("%s not set inside: %v", k, r.EnvNames)
		}
	}
	if r.Enforced.Network != "allow" || !strings.Contains(r.Enforced.Egress, "127.0.0.1:3128") || !strings.Contains(r.Enforced.Egress, "allow pypi.org,127.0.0.1:8080") {
		t.Errorf("enforced network %q egress %q", r.Enforced.Network, r.Enforced.Egress)
	}
}
