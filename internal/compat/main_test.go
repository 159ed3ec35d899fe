package compat_test

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/nsjail"
)

// workDir holds the sandboxes' workspaces; TestMain makes and removes it.
var workDir string

func TestMain(m *testing.M) {
	nsjail.Init()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "airlock-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// As root the sandbox runs as host uid 65534, which must reach the
	// workspaces made below it.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workDir = dir
	start := time.Now()
	code := m.Run()
	table.print(os.Stdout, time.Since(start))
	if sandboxes.ex != nil {
		sandboxes.ex.Close()
	}
	return code
}

// table collects one row per module and tool for the summary printed at
// the end of the run.
var table rows

type row struct {
	Name         string
	Bare, Inside *run
	BareBad      int // cases that fail bare: host quirks, not judged
	Differ       int // cases worse inside, not excused: failures
	Excused      int // cases worse inside, excused by the table
	Flaky        int // cases worse inside that passed when run again
	Stale        int // exceptions that no longer hold: failures
}

type rows struct {
	mu   sync.Mutex
	rows []row
}

func (r *rows) add(x row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, x)
}

// print writes the table and one summary line.
func (r *rows) print(w io.Writer, wall time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return
	}
	sort.Slice(r.rows, func(i, j int) bool { return r.rows[i].Name < r.rows[j].Name })
	fmt.Fprintf(w, "\ncompat suite, %s: bare vs inside airlock (default policy, limits raised)\n", modeName())
	fmt.Fprintf(w, "%-32s %-22s %-22s %-16s %-16s %6s %7s %5s %8s %5s %15s\n",
		"module", "bare", "inside", "bare ok/skip/bad", "in ok/skip/bad", "differ", "excused", "flaky", "bare-bad", "stale", "wall bare/in")
	var differ, excused, flaky, bareBad, stale int
	var tb, ti time.Duration
	for _, x := range r.rows {
		bo, bs, bb := x.Bare.counts()
		iok, is, ib := x.Inside.counts()
		fmt.Fprintf(w, "%-32s %-22s %-22s %-16s %-16s %6d %7d %5d %8d %5d %15s\n",
			x.Name, verdict(x.Bare), verdict(x.Inside), fmt.Sprintf("%d/%d/%d", bo, bs, bb), fmt.Sprintf("%d/%d/%d", iok, is, ib),
			x.Differ, x.Excused, x.Flaky, x.BareBad, x.Stale,
			fmt.Sprintf("%.1fs/%.1fs", x.Bare.Wall.Seconds(), x.Inside.Wall.Seconds()))
		differ, excused, flaky, bareBad, stale = differ+x.Differ, excused+x.Excused, flaky+x.Flaky, bareBad+x.BareBad, stale+x.Stale
		tb, ti = tb+x.Bare.Wall, ti+x.Inside.Wall
	}
	fmt.Fprintf(w, "compat suite, %s: %d modules and tools; cases: %d differ, %d excused, %d flaky, %d fail bare (host quirks), %d stale exceptions; bare %.0fs + inside %.0fs, suite %.0fs wall\n",
		modeName(), len(r.rows), differ, excused, flaky, bareBad, stale, tb.Seconds(), ti.Seconds(), wall.Seconds())
}

// verdict is a run's status and regrtest's summary, shortened.
func verdict(r *run) string {
	s := r.Status
	if r.Summary != "" {
		s += " " + strings.ReplaceAll(r.Summary, " ", "_")
	}
	if r.Crashed != "" {
		s += " (no report)"
	}
	if len(s) > 22 {
		s = s[:22]
	}
	return s
}
