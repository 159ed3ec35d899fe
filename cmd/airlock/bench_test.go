package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// bwrapArgs is bubblewrap doing what `airlock run` does by default: all
// namespaces, a tmpfs root with read-only /usr and merged-usr links, fresh
// /proc and /dev, tmpfs /tmp and /workspace, new session, clean env.
var bwrapArgs = []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
	"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
	"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
	"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/workspace", "--chdir", "/workspace"}

// BenchmarkColdStart measures `airlock run -- /bin/true` against bare
// /bin/true and bwrap doing the same, interleaved in one run so that they
// share the machine's noise. Each iteration runs all three once; the
// medians are reported (bare-ms, airlock-ms, bwrap-ms and the overheads).
// Run it with scripts/bench or:
//
//	go test -run '^$' -bench ColdStart -benchtime 200x ./cmd/airlock
func BenchmarkColdStart(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "airlock")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	os.Chmod(filepath.Dir(bin), 0o755)
	rows := map[string][]string{
		"bare":    {"/bin/true"},
		"airlock": {bin, "run", "--", "/bin/true"},
	}
	if p, err := exec.LookPath("bwrap"); err == nil {
		rows["bwrap"] = append(append([]string{p}, bwrapArgs...), "/bin/true")
	} else {
		b.Log("bwrap not installed: no bwrap row")
	}
	times := map[string][]time.Duration{}
	for name, argv := range rows { // warm the page cache
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range []string{"bare", "airlock", "bwrap"} {
			argv, ok := rows[name]
			if !ok {
				continue
			}
			t := time.Now()
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			times[name] = append(times[name], time.Since(t))
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	for name, ts := range times {
		slices.Sort(ts)
		med[name] = float64(ts[len(ts)/2].Microseconds()) / 1000
		b.ReportMetric(med[name], name+"-ms")
	}
	b.ReportMetric(med["airlock"]-med["bare"], "airlock-overhead-ms")
	if _, ok := med["bwrap"]; ok {
		b.ReportMetric(med["bwrap"]-med["bare"], "bwrap-overhead-ms")
	}
	b.ReportMetric(0, "ns/op") // the per-iteration time mixes three commands
}
