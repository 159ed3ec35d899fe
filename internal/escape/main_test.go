package escape_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/nsjail"
)

// secretEnv is set on the supervisor (this process) with a random value
// that must never be seen inside any sandbox (K01, H03).
const secretEnv = "AIRLOCK_ESCAPE_SECRET"

func TestMain(m *testing.M) {
	nsjail.Init()
	os.Exit(runSuite(m))
}

// runSuite gives the run a private TMPDIR, so that "no new temp dirs" is
// judged on this process's own directory, sets the secret, and prints the
// summary line after the tests.
func runSuite(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "airlock-escape-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// As root the sandbox runs as host uid 65534, which must traverse it
	// to reach the ro-bound canary.
	if err := os.Chmod(tmp, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("TMPDIR", tmp)
	os.Setenv(secretEnv, "airlock-secret-"+randomHex(16))
	code := m.Run()
	if line := tally.summary(); line != "" {
		fmt.Println(line)
	}
	return code
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tally counts verdicts for the summary line.
var tally verdicts

type verdicts struct {
	mu      sync.Mutex
	total   int
	safe    int
	nothing []string // "ID: reason"
}

func (v *verdicts) add(id, verdict, reason string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.total++
	switch verdict {
	case "safe":
		v.safe++
	case "nothing":
		v.nothing = append(v.nothing, id+": "+reason)
	}
}

func (v *verdicts) summary() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.total == 0 {
		return ""
	}
	return fmt.Sprintf("escape suite: %d probes, %d safe, %d proved nothing here (%s)",
		v.total, v.safe, len(v.nothing), strings.Join(v.nothing, "; "))
}
