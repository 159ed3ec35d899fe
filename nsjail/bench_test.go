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
// start-up costs stay out of the measurement. With the argument "filter"
// it first loads a one-instruction allow-all seccomp filter on itself.
const loopC = `
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "filter") == 0) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = {1, &allow};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
			perror("seccomp");
			return 1;
		}
	}
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
// same loop bare, and splits the difference: bare under a one-instruction
// allow-all filter (the cost any seccomp filter adds to this kernel's
// syscall entry), the sandbox without a filter (what the namespaces cost
// getppid, which translates the pid into the sandbox's pid namespace),
// and the sandbox under the allow-all filter (the floor for a filtered
// sandbox). It reports the median ns per getppid() of each and the
// ratios; the target is the default filter within 1.05 of bare.
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
	noFilter := spec
	noFilter.Seccomp = nil
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
	bareRun := func(args ...string) float64 {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			b.Fatalf("bare loop %v: %v", args, err)
		}
		return perCall(string(out))
	}
	var bare, bareFiltered, unfiltered, floor, def []float64
	for i := 0; i < b.N; i++ {
		bare = append(bare, bareRun())
		bareFiltered = append(bareFiltered, bareRun("filter"))
		unfiltered = append(unfiltered, inSandbox(noFilter))
		floor = append(floor, inSandbox(allowAll))
		def = append(def, inSandbox(spec))
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	mb, mbf, mu, mf, md := med(bare), med(bareFiltered), med(unfiltered), med(floor), med(def)
	b.ReportMetric(mb, "bare-ns/call")
	b.ReportMetric(mbf, "bare-allowall-ns/call")
	b.ReportMetric(mu, "nofilter-ns/call")
	b.ReportMetric(mf, "allowall-ns/call")
	b.ReportMetric(md, "default-ns/call")
	b.ReportMetric(md/mb, "ratio")
	b.ReportMetric(md/mf, "filter-ratio")
	b.ReportMetric(0, "ns/op")
}
