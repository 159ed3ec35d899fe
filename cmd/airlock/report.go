package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// reporter reports one request's outcome: with --json, exactly one JSON
// result on stdout whatever happened (refusals and cancellations
// included); without, one stderr line for every refusal, failure or kill.
// The exit status is the result's exit_code either way.
type reporter struct {
	json           bool
	verbose        bool // --verbose: the connections --net allow refused, on stderr
	stdout, stderr io.Writer
	interrupted    syscall.Signal // the SIGINT or SIGTERM that cancelled the run
	// daemon is the command and arguments that airlock-daemon runs in
	// this process's place when the request needs it (needsDaemon).
	daemon []string
}

// fail reports a request that has no outcome of its own: refused before
// anything ran, or failed without a result.
func (o *reporter) fail(err error) int {
	return o.report(executor.ErrorResult(err), nil)
}

// usageError reports a command line that names no request a command can
// carry out (an unknown flag or subcommand, a missing or extra argument)
// as run and exec report theirs: class invalid, one stderr line ending in
// the retry hint, exit 125. Commands whose --json prints a report, not a
// result, (doctor, posture, policy, serve, help) report it this way.
func usageError(stdout, stderr io.Writer, err error) int {
	return (&reporter{stdout: stdout, stderr: stderr}).fail(err)
}

// retryHint says, after a failure's message, whether retrying can help.
func retryHint(e *policy.ErrorInfo) string {
	switch e.Class {
	case policy.ClassInvalid:
		return "do not retry: fix the request"
	case policy.ClassUnsupported:
		return "do not retry: this host cannot enforce it; see the fix"
	case policy.ClassUnavailable:
		return "transient: a retry can help"
	}
	return "internal error: a retry is unlikely to help"
}

// report prints res (its policy p, when it ran, for the kill line) and
// returns the exit status.
func (o *reporter) report(res *executor.Result, p *policy.Policy) int {
	if line := o.line(res, p); line != "" {
		fmt.Fprintf(o.stderr, "airlock: %s\n", line)
	}
	if o.json && o.stdout == io.Writer(os.Stdout) && stdoutClosedAtStart() {
		// Closed when airlock started (>&-): the runtime's /dev/null
		// would swallow the result without an error.
		fmt.Fprintf(o.stderr, "airlock: the JSON result could not be written to stdout: it was closed when airlock started (exit %d)\n", res.ExitCode)
		return res.ExitCode
	}
	if o.json {
		enc := json.NewEncoder(o.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			// A closed stdout: the result is lost, but not silently.
			fmt.Fprintf(o.stderr, "airlock: the JSON result could not be written to stdout: %v (exit %d)\n", err, res.ExitCode)
		}
	}
	return res.ExitCode
}

// line is the stderr line of a result that needs one: a refusal or a
// failure with its retry hint, a kill naming the limit and its flag, a
// cancellation; "" for a program that ended on its own.
func (o *reporter) line(res *executor.Result, p *policy.Policy) string {
	e := res.Error
	switch res.Status {
	case nsjail.StatusError, nsjail.StatusSetupError:
		if e == nil {
			return "failed (" + string(res.Status) + ")"
		}
		msg := e.Message
		if e.Fix != "" && !strings.Contains(msg, e.Fix) {
			msg += " (fix: " + e.Fix + ")"
		}
		return msg + " (" + retryHint(e) + ")"
	case nsjail.StatusTimeout:
		if e != nil {
			return "killed: " + e.Message + " (--timeout; " + retryHint(e) + ")"
		}
		return "killed: wall-clock timeout " + durationOf(p, func(p *policy.Policy) policy.Duration { return p.Timeout }) + " (--timeout)" + limitHint
	case nsjail.StatusCPULimit:
		return "killed: CPU-time limit " + durationOf(p, func(p *policy.Policy) policy.Duration { return p.CPUTime }) + " (--cpu-time)" + limitHint
	case nsjail.StatusMemoryLimit:
		s := "?"
		if p != nil {
			s = sizeString(p.MemoryLimit())
		}
		return "killed: memory limit " + s + " (--memory)" + limitHint
	case nsjail.StatusOutputLimit:
		s := "?"
		if p != nil {
			s = sizeString(int64(p.MaxOutput))
		}
		return "killed: output limit " + s + " per stream (--max-output); the output was cut there" + limitHint
	case nsjail.StatusSeccompViolation:
		name := res.SeccompSyscall
		if name == "" {
			name = "a syscall the policy kills on, or a foreign syscall ABI (x32, int 0x80)"
		}
		return "killed: seccomp: " + name + " (do not retry: the policy forbids it)"
	case nsjail.StatusCancelled:
		how := "the program ended within the grace period"
		if res.Signal == "SIGKILL" {
			how = "the sandbox was killed (--kill-grace)"
		}
		return fmt.Sprintf("cancelled by %s: %s (exit %d)", sigName(o.interrupted), how, res.ExitCode)
	}
	return ""
}

// limitHint ends a kill line: whether a retry can help.
const limitHint = "; a retry under the same limit ends the same way"

func durationOf(p *policy.Policy, f func(*policy.Policy) policy.Duration) string {
	if p == nil {
		return "?"
	}
	return time.Duration(f(p)).String()
}

// sizeString writes n bytes as airlock's flags take them: 512MiB.
func sizeString(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// forwarded are the signals run and exec pass on to the program. SIGINT
// and SIGTERM also cancel: the program has the policy's kill_grace to
// end, then (or at a second SIGINT or SIGTERM) the sandbox is killed.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// notifyForwarded registers forwarded in the background and returns
// the channel they arrive on and one closed once they are registered,
// which the run's program waits for (executor.Request.ProgramGate).
// Go's runtime enables each signal with a round trip to its signal-mask
// thread, two thread wake-ups: the seven took 0.6 to 0.8 ms of the
// CLI's setup on its one P (BenchmarkCLIPhases, 2026-11-27). In the
// background they go on while the CLI waits for the sandbox's jail.
// runRequest unregisters them in the background at its end.
func notifyForwarded() (chan os.Signal, <-chan struct{}) {
	c, done := make(chan os.Signal, 16), make(chan struct{})
	go func() {
		signal.Notify(c, forwarded...)
		close(done)
	}()
	return c, done
}

// interrupt is the CLI's signal handling for one run.
type interrupt struct {
	mu  sync.Mutex
	sig syscall.Signal // the first SIGINT or SIGTERM; 0 = none
}

func (in *interrupt) first() syscall.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sig
}

// handle passes the signals on until done: each to fwd (the program);
// the first SIGINT or SIGTERM starts the grace period, whose end or a
// second one cancels the run.
func (in *interrupt) handle(sigc <-chan os.Signal, fwd chan<- os.Signal, grace time.Duration, cancel func(), done <-chan struct{}) {
	var graceEnd <-chan time.Time
	for {
		select {
		case <-done:
			return
		case <-graceEnd:
			cancel()
			return
		case sig := <-sigc:
			s, _ := sig.(syscall.Signal)
			if s == syscall.SIGINT || s == syscall.SIGTERM {
				in.mu.Lock()
				again := in.sig != 0
				if !again {
					in.sig = s
				}
				in.mu.Unlock()
				if again {
					cancel()
					return
				}
				t := time.NewTimer(grace)
				defer t.Stop()
				graceEnd = t.C
			}
			select {
			case fwd <- sig:
			default: // the program is not keeping up; a signal is not a queue
			}
		}
	}
}

// runRequest runs one request through a new executor and reports it: the
// program's output passed through (capped with --max-output), or one
// JSON result with --json. Signals to airlock are passed on to the
// program; SIGINT or SIGTERM make the result cancelled, exit 130 or 143.
func runRequest(ex *executor.Executor, req executor.Request, o *reporter) int {
	sigc, ready := notifyForwarded()
	defer func() {
		ex.Close()
		phases.mark("closed")
		// Unregistered in the background, and only once Close has
		// returned: the CLI exits before that is done (it would be seven
		// more round trips on its way out), where a goroutine started
		// before Close took them while Close waited for the cgroup's
		// removal, on the same one P (0.1 ms of futex wake-ups there,
		// perf, 2026-11-28). A process that runs more than one request
		// (the tests' in-process CLI) gets Go's default actions back.
		go func() {
			<-ready
			signal.Stop(sigc)
		}()
	}()
	warnWeakened(req.Policy, o.stderr)
	req.ProgramGate = ready
	fwd := make(chan os.Signal, 16)
	req.Signals = fwd
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var in interrupt
	grace := time.Duration(req.Policy.KillGrace)
	if grace <= 0 {
		grace = policy.DefaultKillGrace
	}
	go in.handle(sigc, fwd, grace, cancel, done)
	phases.mark("execute")
	res, err := ex.Execute(ctx, req)
	phases.mark("executed")
	close(done)
	if o.verbose && res != nil {
		printDenials(res.Network, o.stderr)
	}
	if res == nil {
		res = executor.ErrorResult(idMapCause(langError(err)))
	}
	if sig := in.first(); sig != 0 {
		// The caller interrupted the run: whatever the program did after
		// it was passed the signal, the outcome is a cancellation, with
		// the output so far, reported as a shell would (130, 143).
		res.Status, res.ExitCode = nsjail.StatusCancelled, 128+int(sig)
		o.interrupted = sig
	}
	code := o.report(res, &req.Policy)
	phases.mark("reported")
	return code
}

// streams are where the program's output goes: this process's stdout and
// stderr (capped at the policy's max_output if capStreams), or, with
// --json, captured into the result.
func (o *reporter) streams(req *executor.Request, capStreams bool) {
	if !o.json {
		req.Stdout, req.Stderr = o.stdout, o.stderr
		req.LimitStreams = capStreams
	}
}

// executor returns the Executor made with cfg for req, or the exit status
// when there is none: its setup failed, or airlock-daemon had to run the
// request and could not (needsDaemon; when it can, this process becomes
// it and this never returns). Either way req's launched init, if any, is
// closed first.
func (o *reporter) executor(cfg executor.Config, req *executor.Request) (*executor.Executor, int, bool) {
	ex, err := executor.New(cfg)
	if err != nil {
		closeLaunched(req)
		return nil, o.fail(err), false
	}
	phases.mark("new")
	if control, why := needsDaemon(ex, req.Policy); control != "" && len(o.daemon) > 0 {
		ex.Close()
		closeLaunched(req)
		return nil, o.fail(daemonExec(o.daemon[0], o.daemon[1:], control, why)), false
	}
	return ex, 0, true
}

// closeLaunched kills and reaps req's launched init, if any.
func closeLaunched(req *executor.Request) {
	if req.Launched != nil {
		req.Launched.Close()
		req.Launched = nil
	}
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
