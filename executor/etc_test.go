package executor_test

import (
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

// /etc inside: the service and protocol tables resolve names as on the
// host; the resolver's configuration and the CA certificates come only
// with the host's network; nothing else of the host's /etc shows.
func TestEtcInside(t *testing.T) {
	testutil.RequireBinary(t, "python3")
	probe := `
import os, socket
print(socket.getservbyname("http", "tcp"), socket.getprotobyname("tcp"), socket.getaddrinfo("localhost", "https")[0][4][1])
print(os.path.exists("/etc/resolv.conf"), os.path.exists("/etc/ssl/certs/ca-certificates.crt"), sorted(os.listdir("/etc")))
`
	out := testutil.Sh(t, "python3 -c '"+probe+"'", nil)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "80 6 443" || !strings.HasPrefix(lines[1], "False False ") {
		t.Fatalf("no network: %q", out)
	}
	for _, name := range []string{"'shadow'", "'sudoers'", "'ssh'", "'fstab'", "'machine-id'"} {
		if strings.Contains(lines[1], name) {
			t.Errorf("host /etc entry %s visible: %s", name, lines[1])
		}
	}
	testutil.RequireFeature(t, "CA certificates on the host", testutil.Exists("/etc/ssl/certs/ca-certificates.crt"))
	out = testutil.Sh(t, "python3 -c '"+probe+"'", func(p *policy.Policy) { p.Net = policy.NetHost })
	lines = strings.Split(strings.TrimSpace(out), "\n")
	want := "True True "
	if !testutil.Exists("/etc/resolv.conf") {
		want = "False True "
	}
	if len(lines) != 2 || lines[0] != "80 6 443" || !strings.HasPrefix(lines[1], want) {
		t.Fatalf("host network: %q", out)
	}
}
