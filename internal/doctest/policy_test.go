package doctest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// Every JSON and YAML block of docs/policy.md is a policy policy.Parse
// accepts: an example a reader copies is one airlock reads.
func TestPolicyExamplesParse(t *testing.T) {
	root := repoRoot(t)
	blocks, _ := scan(readLines(t, filepath.Join(root, "docs", "policy.md")))
	n := 0
	for _, b := range blocks {
		if b.info != "json" && b.info != "yaml" {
			continue
		}
		n++
		if _, err := policy.Parse([]byte(strings.Join(b.lines, "\n"))); err != nil {
			t.Errorf("docs/policy.md:%d: the %s example does not parse: %v", b.line, b.info, err)
		}
	}
	if n < 3 {
		t.Fatalf("docs/policy.md: %d json/yaml examples found, want at least 3", n)
	}
}
