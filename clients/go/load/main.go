// Command load measures airlock serve: N runs of a program from C
// concurrent clients over the unix socket, beside the same program run
// bare and under bwrap from C goroutines, in one invocation (this
// machine's noise moves whole runs; compare rows of one run).
//
//	go run ./clients/go/load -addr unix:/run/airlock.sock -n 1000 -c 2
//
// It prints one row per mode: runs/s, p50 and p99 latency, and the
// served rows' overhead over bare. scripts/loadtest starts the server.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

func main() {
	// The "library" mode's sandboxes re-execute this binary as their init.
	nsjail.Init()
	addr := flag.String("addr", "", "the server: unix:PATH")
	n := flag.Int("n", 1000, "runs per mode")
	c := flag.Int("c", 2, "concurrent clients")
	prog := flag.String("prog", "/bin/true", "the program")
	modes := flag.String("modes", "bare,bwrap,library,served", "modes to measure, in order (library: executor.Execute in this process with a warm pool of -pool)")
	poolSize := flag.Int("pool", 4, "the library mode's warm pool size")
	reuse := flag.Int("reuse", 1, "the library mode's PoolConfig.Reuse (requests a pooled sandbox serves)")
	initPath := flag.String("init", "", "the library mode's Config.InitPath (an airlock-init of this binary's build token; with -spawn)")
	spawnPath := flag.String("spawn", "", "the library mode's Config.SpawnPath (airlock-spawn: the waiting reaper, recycling)")
	rounds := flag.Int("rounds", 5, "rounds: each mode runs n/rounds times a round, so the machine's noise falls on every mode alike")
	gap := flag.Duration("gap", 0, "pause of each client between its runs (latency below saturation: the pool refills in the gaps; runs/s then counts the pauses)")
	flag.Parse()
	path, ok := strings.CutPrefix(*addr, "unix:")
	if !ok {
		fmt.Fprintln(os.Stderr, "load: -addr unix:PATH is required")
		os.Exit(2)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *c, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	body := fmt.Sprintf(`{"argv":[%q]}`, *prog)
	bwrap := []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *prog}
	var lib *executor.Executor
	if strings.Contains(*modes, "library") {
		work, err := os.MkdirTemp("", "airlock-load-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		os.Chmod(work, 0o711)
		defer os.RemoveAll(work)
		lib, err = executor.New(executor.Config{WorkDir: work, InitPath: *initPath, SpawnPath: *spawnPath,
			Pool: executor.PoolConfig{Size: *poolSize, Policy: policy.Default(), Refill: min(*poolSize, 2), Reuse: *reuse}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "load: library:", err)
			os.Exit(1)
		}
		defer lib.Close()
	}
	libReq := executor.Request{Args: []string{*prog}}
	run := map[string]func() error{
		"library": func() error {
			res, err := lib.Execute(context.Background(), libReq)
			if err == nil && res.Status != nsjail.StatusOK {
				err = fmt.Errorf("%s", res.Status)
			}
			return err
		},
		"bare":  func() error { return exec.Command(*prog).Run() },
		"bwrap": func() error { return exec.Command("bwrap", bwrap...).Run() },
		"served": func() error {
			resp, err := hc.Post("http://airlock/v1/run", "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"status":"ok"`)) {
				return fmt.Errorf("%d %s", resp.StatusCode, b)
			}
			return nil
		},
	}
	// Warm up: the server's pool and filter cache, the page cache.
	for _, m := range strings.Split(*modes, ",") {
		for range 20 {
			if err := run[m](); err != nil {
				fmt.Fprintf(os.Stderr, "load: %s: %v\n", m, err)
				os.Exit(1)
			}
		}
	}
	fmt.Printf("%d runs of %s per mode, %d clients, %v between a client's runs\n", *n, *prog, *c, *gap)
	fmt.Printf("%-8s %9s %9s %9s %12s\n", "mode", "runs/s", "p50 ms", "p99 ms", "p50 - bare")
	type row struct {
		lat     []time.Duration
		elapsed time.Duration
	}
	rows := map[string]*row{}
	list := strings.Split(*modes, ",")
	for r := range *rounds {
		for _, m := range list {
			if rows[m] == nil {
				rows[m] = &row{}
			}
			k := *n / *rounds
			if r == *rounds-1 {
				k = *n - k*(*rounds-1)
			}
			lat, elapsed, err := measure(run[m], k, *c, *gap)
			if err != nil {
				fmt.Fprintf(os.Stderr, "load: %s: %v\n", m, err)
				os.Exit(1)
			}
			rows[m].lat = append(rows[m].lat, lat...)
			rows[m].elapsed += elapsed
		}
	}
	var bareP50 time.Duration
	for _, m := range list {
		lat := rows[m].lat
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		rate := float64(len(lat)) / rows[m].elapsed.Seconds()
		if m == "bare" {
			bareP50 = p50
		}
		over := ""
		if bareP50 > 0 && m != "bare" {
			over = fmt.Sprintf("%+.2f ms", ms(p50-bareP50))
		}
		fmt.Printf("%-8s %9.1f %9.2f %9.2f %12s\n", m, rate, ms(p50), ms(p99), over)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measure runs f n times from c goroutines: each run's latency, and the
// time all took.
func measure(f func() error, n, c int, gap time.Duration) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t := time.Now()
				if err := f(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				lat[i] = time.Since(t)
				time.Sleep(gap)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, 0, err
	}
	return lat, time.Since(start), nil
}
