package executor_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// Live sandboxes, side by side with a bare start and a cold run in one
// run (go test -bench Live -run '^$' ./executor): creating one (and
// closing it), a process into one, against /bin/true bare and a cold
// Execute of it.
//
// BenchmarkLiveCreate/warm takes each from a warm pool (PoolConfig.Live)
// that was refilled before (untimed): what a served create costs when the
// pool keeps up.
func BenchmarkLiveCreate(b *testing.B) {
	b.Run("cold", func(b *testing.B) {
		ex := liveExecutor(b)
		p := livePolicy(ex)
		for b.Loop() {
			s, err := ex.NewSandbox(b.Context(), executor.SandboxConfig{Policy: p})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("warm", func(b *testing.B) {
		ex := liveExecutor(b)
		p := livePolicy(ex)
		warm, err := executor.New(executor.Config{WorkDir: testutil.WorldReadableDir(b), SpawnPath: testutil.RequireReaper(b),
			InitPath: filepath.Join(testutil.BinDir(b), "airlock-init-plain"), Pool: executor.PoolConfig{Policy: p, Live: 1}})
		if err != nil {
			b.Fatal(err)
		}
		defer warm.Close()
		for b.Loop() {
			b.StopTimer()
			for warm.LiveReady() == 0 {
				time.Sleep(time.Millisecond)
			}
			b.StartTimer()
			s, err := warm.NewSandbox(b.Context(), executor.SandboxConfig{Policy: p})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
}

func BenchmarkLiveProcess(b *testing.B) {
	ex := liveExecutor(b)
	s, err := ex.NewSandbox(b.Context(), executor.SandboxConfig{Policy: livePolicy(ex)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if res, err := s.Run(b.Context(), executor.ProcessRequest{Argv: []string{"/bin/true"}}, nil); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkLiveBare(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLiveColdRun(b *testing.B) {
	ex := liveExecutor(b)
	p := livePolicy(ex)
	for b.Loop() {
		if res, err := ex.Execute(b.Context(), executor.Request{Args: []string{"/bin/true"}, Policy: p}); err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkLiveIdleMemory holds 200 idle live sandboxes and reports what
// each costs the host beyond its programs: the growth of this process's
// resident memory (the supervisor's state, its locked thread) plus the
// proportional set size of its pid 1 and of the spawn helper that waits
// for it, per sandbox (host_KiB/sandbox).
func BenchmarkLiveIdleMemory(b *testing.B) {
	ex := liveExecutor(b)
	p := livePolicy(ex)
	const n = 200
	for b.Loop() {
		before := kib(b, "/proc/self/status", "VmRSS:")
		var boxes []*executor.Sandbox
		for range n {
			s, err := ex.NewSandbox(b.Context(), executor.SandboxConfig{Policy: p})
			if err != nil {
				b.Fatal(err)
			}
			boxes = append(boxes, s)
		}
		after := kib(b, "/proc/self/status", "VmRSS:")
		var pss int64
		for _, s := range boxes {
			pid1 := s.HostPID()
			pss += kib(b, fmt.Sprintf("/proc/%d/smaps_rollup", pid1), "Pss:")
			if helper := ppid(b, pid1); helper != os.Getpid() {
				pss += kib(b, fmt.Sprintf("/proc/%d/smaps_rollup", helper), "Pss:")
			}
		}
		b.ReportMetric(float64(after-before+pss)/n, "host_KiB/sandbox")
		b.ReportMetric(float64(after-before)/n, "supervisor_KiB/sandbox")
		for _, s := range boxes {
			s.Close()
		}
	}
}

func kib(b *testing.B, file, key string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, key) {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in %s", key, file)
	return 0
}

func ppid(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	n, _ := strconv.Atoi(f[1])
	return n
}
