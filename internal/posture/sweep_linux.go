//go:build linux

package posture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// Sweep is the result of calling every syscall with invalid arguments:
// EPERM = blocked, ENOSYS = blocked or not implemented, any other result
// = reachable (the kernel got to look at the arguments).
type Sweep struct {
	Counts  SweepCounts     `json:"counts"`
	EPERM   []string        `json:"blocked_eperm"`
	ENOSYS  []string        `json:"blocked_enosys"`
	Skipped []Skipped       `json:"skipped"`
	Failed  []Skipped       `json:"failed,omitempty"`
	Results []SyscallResult `json:"results"`
	// Note says why there is no sweep, when there is none.
	Note string `json:"note,omitempty"`
}

// SweepCounts sums up a sweep.
type SweepCounts struct {
	Swept     int `json:"swept"`
	EPERM     int `json:"blocked_eperm"`
	ENOSYS    int `json:"blocked_enosys"`
	Reachable int `json:"reachable"`
	Skipped   int `json:"skipped"`
	// Failed calls ended or stalled the probing child.
	Failed int `json:"failed"`
}

// Skipped is a syscall that was not called, or whose call was lost, and why.
type Skipped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// SyscallResult is one swept number: its errno name ("ok" when it
// succeeded) and class: eperm, enosys, reachable, skipped or failed.
type SyscallResult struct {
	Nr    int    `json:"nr"`
	Name  string `json:"name"`
	Errno string `json:"errno,omitempty"`
	Class string `json:"class"`
}

// Syscall is one number of the sweep.
type Syscall struct {
	Nr   int
	Name string
}

// extraNumbers are swept beyond the named ones: a number in the gap of
// the table, and one far past its end (a filter must refuse numbers it
// does not know, not allow them).
var extraNumbers = []int{400, 1000}

// Syscalls returns the numbers the sweep covers, in order: every native
// syscall golang.org/x/sys names (via the seccomp package's table), the
// number just past the highest, and extraNumbers.
var Syscalls = sync.OnceValue(func() []Syscall {
	var out []Syscall
	maxNr := 0
	for nr := 0; nr < 1024; nr++ {
		if name := seccomp.SyscallName(int32(nr)); name != unnamed(nr) {
			out = append(out, Syscall{nr, name})
			maxNr = nr
		}
	}
	out = append(out, Syscall{maxNr + 1, unnamed(maxNr + 1)})
	for _, nr := range extraNumbers {
		if seccomp.SyscallName(int32(nr)) == unnamed(nr) && nr != maxNr+1 {
			out = append(out, Syscall{nr, unnamed(nr)})
		}
	}
	return out
})

func unnamed(nr int) string { return fmt.Sprintf("syscall_%d", nr) }

// neverCall are syscalls the sweep does not make even with invalid
// arguments: they end, stop, copy or change the prober whatever they are
// given, or cost the host something. The reason goes into the report.
var neverCall = map[string]string{
	"exit":            "ends the prober",
	"exit_group":      "ends the prober",
	"rt_sigreturn":    "restores a garbage signal frame (SIGSEGV)",
	"pause":           "blocks until a signal arrives",
	"fork":            "copies the prober",
	"vfork":           "copies the prober and suspends it",
	"clone":           "copies the prober",
	"sync":            "writes back every filesystem of the host",
	"syncfs":          "writes back a filesystem",
	"vhangup":         "hangs up the controlling terminal",
	"setsid":          "moves the prober to a new session",
	"set_tid_address": "changes what the kernel writes when the thread exits",
	"uretprobe":       "raises SIGILL outside a uretprobe trampoline",
	"uprobe":          "raises SIGILL outside a uprobe trampoline",
}

// bad is the invalid argument: -1 as an fd (EBADF), a kernel address as a
// pointer (EFAULT), all bits as flags and sizes (EINVAL).
const bad = ^uintptr(0)

// specialArgs replace the all-bad arguments where they would mislead or
// change state: futex with an unknown op is ENOSYS (as if filtered), so
// it gets FUTEX_WAIT on a misaligned address (EINVAL); msgget with
// IPC_CREAT in all-ones flags would create a queue, so it gets no flags
// (ENOENT).
var specialArgs = map[string][6]uintptr{
	"futex":  {bad, 0, 0, bad, 0, 0},
	"msgget": {bad, 0, 0, 0, 0, 0},
}

// stallTimeout is how long the probing child may go without finishing a
// call before it is killed and the call is reported as failed. It is a
// safety net, not a measurement: with the skip list no call blocks.
var stallTimeout = 20 * time.Second

// maxRestarts bounds how many times a dead or stalled child is replaced.
const maxRestarts = 16

// sweepRequest is what the parent sends a sweep child on its stdin.
type sweepRequest struct {
	Calls []int `json:"calls"`
}

// ServeSweep is the sweep child: it reads the numbers to call from r and
// calls each, on one locked OS thread, with invalid arguments, writing
// "NR ERRNO" to w after each call (0 = success), so the parent knows how
// far it got if a call ends it. Run it only inside a sandbox.
func ServeSweep(r io.Reader, w io.Writer) error {
	return serve(r, w, call)
}

func serve(r io.Reader, w io.Writer, do func(nr int) unix.Errno) error {
	var req sweepRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return fmt.Errorf("sweep request: %w", err)
	}
	// One thread: whatever per-thread state a call changes stays on it,
	// and no Go runtime work interleaves with the calls on that thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, nr := range req.Calls {
		e := do(nr)
		if _, err := fmt.Fprintf(w, "%d %d\n", nr, int(e)); err != nil {
			return err
		}
	}
	return nil
}

func call(nr int) unix.Errno {
	a, ok := specialArgs[seccomp.SyscallName(int32(nr))]
	if !ok {
		a = [6]uintptr{bad, bad, bad, bad, bad, bad}
	}
	_, _, e := unix.Syscall6(uintptr(nr), a[0], a[1], a[2], a[3], a[4], a[5])
	return e
}

// runSweep sweeps in children of o.SweepCommand. A call that ends or
// stalls a child is reported as failed and the sweep goes on in a new
// child from the next number.
func runSweep(o Options) Sweep {
	if len(o.SweepCommand) == 0 {
		return Sweep{Note: "not run", EPERM: []string{}, ENOSYS: []string{}, Skipped: []Skipped{}, Results: []SyscallResult{}}
	}
	all := Syscalls()
	skipped := map[int]string{}
	var pending []int
	for _, s := range all {
		if why, ok := neverCall[s.Name]; ok {
			skipped[s.Nr] = why
		} else if why, ok := o.Skip[s.Name]; ok {
			skipped[s.Nr] = why
		} else {
			pending = append(pending, s.Nr)
		}
	}
	got := map[int]unix.Errno{}
	failed := map[int]string{}
	for restarts := 0; len(pending) > 0; restarts++ {
		if restarts > maxRestarts {
			for _, nr := range pending {
				failed[nr] = "not called: the probing child failed too often"
			}
			break
		}
		n, why := sweepChild(o.SweepCommand, pending, got)
		pending = pending[n:]
		if len(pending) > 0 {
			failed[pending[0]] = why
			pending = pending[1:]
		}
	}
	return summarize(all, got, skipped, failed)
}

// sweepChild runs one child over calls and records its results in got.
// It returns how many calls completed and, when not all did, why the
// child stopped (the next call is the one it was in).
func sweepChild(argv []string, calls []int, got map[int]unix.Errno) (int, string) {
	req, err := json.Marshal(sweepRequest{Calls: calls})
	if err != nil {
		return 0, err.Error()
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin = bytes.NewReader(req)
	out, err := c.StdoutPipe()
	if err != nil {
		return 0, err.Error()
	}
	if err := c.Start(); err != nil {
		return 0, fmt.Sprintf("starting the probing child: %v", err)
	}
	var stalled atomic.Bool
	watchdog := time.AfterFunc(stallTimeout, func() { stalled.Store(true); c.Process.Kill() })
	n, why := 0, ""
	sc := bufio.NewScanner(out)
	for n < len(calls) && sc.Scan() {
		var nr, e int
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &nr, &e); err != nil || nr != calls[n] {
			why = fmt.Sprintf("probing child protocol error: %q", sc.Text())
			c.Process.Kill()
			break
		}
		got[nr] = unix.Errno(e)
		n++
		watchdog.Reset(stallTimeout)
	}
	io.Copy(io.Discard, out)
	err = c.Wait()
	watchdog.Stop()
	switch {
	case n == len(calls) || why != "":
	case stalled.Load():
		why = fmt.Sprintf("did not return within %v (the probing child was killed)", stallTimeout)
	case err != nil:
		why = "ended the probing child: " + err.Error()
	default:
		why = "the probing child exited early"
	}
	return n, why
}

func summarize(all []Syscall, got map[int]unix.Errno, skipped, failed map[int]string) Sweep {
	s := Sweep{EPERM: []string{}, ENOSYS: []string{}, Skipped: []Skipped{}, Results: []SyscallResult{}}
	for _, sc := range all {
		r := SyscallResult{Nr: sc.Nr, Name: sc.Name}
		if why, ok := skipped[sc.Nr]; ok {
			r.Class = "skipped"
			s.Skipped = append(s.Skipped, Skipped{sc.Name, why})
			s.Counts.Skipped++
		} else if why, ok := failed[sc.Nr]; ok {
			r.Class = "failed"
			s.Failed = append(s.Failed, Skipped{sc.Name, why})
			s.Counts.Failed++
		} else if e, ok := got[sc.Nr]; ok {
			s.Counts.Swept++
			r.Errno = "ok"
			if e != 0 {
				r.Errno = unix.ErrnoName(e)
				if r.Errno == "" {
					r.Errno = fmt.Sprintf("errno %d", int(e))
				}
			}
			switch e {
			case unix.EPERM:
				r.Class = "eperm"
				s.EPERM = append(s.EPERM, sc.Name)
				s.Counts.EPERM++
			case unix.ENOSYS:
				r.Class = "enosys"
				s.ENOSYS = append(s.ENOSYS, sc.Name)
				s.Counts.ENOSYS++
			default:
				r.Class = "reachable"
				s.Counts.Reachable++
			}
		}
		s.Results = append(s.Results, r)
	}
	return s
}
