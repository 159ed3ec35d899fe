package executor_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// Embedding in a daemon: create one Executor at start-up (the binary's
// main calls nsjail.Init first), execute from many goroutines, read each
// Result, and Close at shutdown. Program outcomes are Results; an error
// says, by its class, whether to fix the request, give up on this host,
// or retry.
func Example() {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		fmt.Println("this host cannot run sandboxes:", err) // errors.Is(err, executor.ErrUnsupported)
		return
	}
	defer ex.Close()

	p := policy.Default()
	// Generous: an interpreter's start on a loaded host can take seconds.
	p.Timeout = policy.Duration(time.Minute)
	jobs := map[string]string{
		"square": `print(7 * 7)`,
		"loop":   `while True: pass`,
		"fail":   `raise SystemExit(4)`,
	}
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	for name, code := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := p
			if name == "loop" {
				p.Timeout = policy.Duration(time.Second)
			}
			res, err := ex.Execute(context.Background(), executor.Request{Language: "python", Code: code, Policy: p})
			var line string
			switch {
			case errors.Is(err, executor.ErrInvalid):
				line = "fix the request: " + err.Error()
			case errors.Is(err, executor.ErrUnsupported):
				line = "this host cannot: " + err.Error()
			case errors.Is(err, executor.ErrUnavailable):
				line = "retry later: " + err.Error()
			case err != nil:
				line = "no trusted outcome: " + err.Error()
			default:
				line = fmt.Sprintf("%s: %s exit=%d %q", name, res.Status, res.ExitCode, res.Stdout)
			}
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// fail: exited exit=4 ""
	// loop: timeout exit=137 ""
	// square: ok exit=0 "49\n"
}

// A session keeps /workspace across executions, for agents that build
// state step by step.
func ExampleExecutor_NewSession() {
	ex, err := executor.New(executor.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ex.Close()
	s, err := ex.NewSession(executor.SessionConfig{IdleTimeout: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	s.Execute(context.Background(), executor.Request{Language: "sh", Code: `echo 1 > counter`})
	res, _ := s.Execute(context.Background(), executor.Request{Language: "sh", Code: `echo $(( $(cat counter) + 1 ))`})
	fmt.Print(res.Stdout)
	// Output: 2
}
