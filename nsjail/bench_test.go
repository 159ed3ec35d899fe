package nsjail_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
)

// loopC times n raw getppid() calls and prints nanoseconds per call, so
// start-up costs stay out of the measurement.
const loopC = `
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void) {
	const long n = 1000000;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
`

// BenchmarkSyscallLoop compares a syscall-heavy loop inside the sandbox
// (default policy: namespaces and the default seccomp filter) with the
// same loop bare, and with the sandbox under a one-instruction allow-all
// filter: the cost any seccomp filter has on this kernel's syscall entry,
// which no filter can go below. It reports the median ns per getppid() of
// each and the ratios; the target is a ratio within 1.05.
//
//	go test -run '^$' -bench SyscallLoop -benchtime 20x ./nsjail
func BenchmarkSyscallLoop(b *testing.B) {
	dir := testutil.WorldReadableDir(b)
	src, bin := filepath.Join(dir, "loop.c"), filepath.Join(dir, "loop")
	os.WriteFile(src, []byte(loopC), 0o644)
	if out, err := exec.Command("gcc", "-O2", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		b.Skipf("gcc -static: %v %s", err, out)
	}
	p := policy.Default()
	p.Mounts = []policy.Mount{{Type: policy.MountROBind, Source: dir, Target: "/opt/loop"}}
	ex, _ := executor.New(executor.Config{})
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/opt/loop/loop"}, Policy: p})
	if err != nil {
		b.Fatal(err)
	}
	allowAll := spec
	allowAll.Seccomp = &seccomp.Filter{Profile: "allow-all", Program: seccomp.Program{{Code: 0x06, K: 0x7fff0000}}}
	perCall := func(out string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if err != nil {
			b.Fatalf("loop printed %q", out)
		}
		return v
	}
	inSandbox := func(s nsjail.Spec) float64 {
		res, err := nsjail.Run(b.Context(), s)
		if err != nil || res.Status != nsjail.StatusOK {
			b.Fatalf("sandboxed loop: %v %+v", err, res)
		}
		return perCall(res.Stdout)
	}
	var bare, floor, def []float64
	for i := 0; i < b.N; i++ {
		out, err := exec.Command(bin).Output()
		if err != nil {
			b.Fatal(err)
		}
		bare = append(bare, perCall(string(out)))
		floor = append(floor, inSandbox(allowAll))
		def = append(def, inSandbox(spec))
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	mb, mf, md := med(bare), med(floor), med(def)
	b.ReportMetric(mb, "bare-ns/call")
	b.ReportMetric(mf, "allowall-ns/call")
	b.ReportMetric(md, "default-ns/call")
	b.ReportMetric(md/mb, "ratio")
	b.ReportMetric(md/mf, "filter-ratio")
	b.ReportMetric(0, "ns/op")
}
