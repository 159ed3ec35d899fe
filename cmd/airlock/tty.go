package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/airlock-sandbox/airlock/cmd/airlock/internal/early"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/pty"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
	"golang.org/x/sys/unix"
)

// optID is an optional inside id flag (--uid, --gid): unset keeps the
// policy's value, 0 included when set.
type optID struct {
	v   int
	set bool
}

func (o *optID) String() string {
	if !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optID) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a number", s) // its range is the policy's to check
	}
	o.v, o.set = v, true
	return nil
}

// apply sets *dst to the flag's value, if it was given.
func (o *optID) apply(dst **int) {
	if o.set {
		v := o.v
		*dst = &v
	}
}

// run runs req (runRequest), with a pty of its own for --tty.
func (f *runFlags) run(req executor.Request, o *reporter) int {
	if f.tty && f.json {
		return o.fail(policy.Invalid("--tty", "cannot be combined with --json: a terminal's output is relayed, not captured"))
	}
	cfg := cliConfig(cacheDir())
	// The program's signal dispositions and mask are the ones this
	// process was started with (signals.go).
	cfg.SignalsIgnored, cfg.SignalsBlocked, cfg.SetSignals = entrySignals()
	o.streams(&req, f.given("max-output") && !f.tty) // a terminal's output is relayed whole
	if !f.tty {
		// The sandbox's init started as this process did (early), or it
		// starts now (executor.Launch), while this process makes its
		// Executor; every path below closes or uses it.
		req.Launched = launch(cfg, req)
		phases.mark("launch")
	}
	ex, code, ok := o.executor(cfg, &req)
	if !ok {
		return code
	}
	if !f.tty {
		return runRequest(ex, req, o)
	}
	done, err := withTTY(&req, req.Stdin, o.stdout)
	if err != nil {
		ex.Close()
		return o.fail(err)
	}
	defer done()
	return runRequest(ex, req, o)
}

// launch is req's launched init: the one started at this process's
// start, if it fits (early, executor.Adopt), else one started now
// (executor.Launch), or nil.
func launch(cfg executor.Config, req executor.Request) *nsjail.Launched {
	e := early.Take()
	if e == nil {
		return executor.Launch(cfg, req)
	}
	st := started(e)
	if e.Token != nsjail.BuildToken() {
		// Not this build's init (its token is in its environment): it
		// would refuse the spec.
		nsjail.Abandon(st)
		return executor.Launch(cfg, req)
	}
	return executor.Adopt(cfg, req, st)
}

// started is e as nsjail has it.
func started(e *early.Launch) nsjail.Started {
	return nsjail.Started{Pid: e.Pid, SpecW: e.SpecW, StatusR: e.StatusR, Report: e.Report, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr,
		SpawnPath: e.SpawnPath, InitPath: e.InitPath, UID: e.UID, GID: e.GID, HostUID: e.HostUID, HostGID: e.HostGID, At: e.At}
}

// abandonEarly kills and reaps the init started at this process's start
// if the command never took it (it ended before its run): its helper
// would die with this process anyway, but the init would then be left
// for whatever adopts orphans here to reap.
func abandonEarly() {
	if e := early.Take(); e != nil {
		nsjail.Abandon(started(e))
		phases.mark("early-abandoned")
	}
}

// withTTY gives req a pty of its own (--tty), as docker run -t does: the
// program's stdin, stdout and stderr are its slave, the sandbox's reaper
// makes it the program's controlling terminal, and the master is relayed
// to the caller's stdin and stdout. The caller's terminal itself never
// reaches the sandbox (TIOCSTI and the like act on the pty). When stdin
// is a terminal it is put in raw mode for the run, and its size is the
// pty's, SIGWINCH included. The returned function, called once the run
// ended, drains the output and restores the terminal.
func withTTY(req *executor.Request, stdin io.Reader, stdout io.Writer) (func(), error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, policy.Invalid("--tty", "no pty for the program: %v", err)
	}
	in, _ := stdin.(*os.File)
	var restore func()
	if in != nil {
		restore = rawMode(int(in.Fd()), int(master.Fd()))
	}
	req.TTY, req.Stdin = slave, nil
	if stdin != nil {
		go io.Copy(master, stdin) // ends with the caller's stdin, or at exit
	}
	out := make(chan struct{})
	go func() {
		io.Copy(stdout, master) // EIO once no slave is open: the end
		close(out)
	}()
	return func() {
		// The sandbox is gone and with it its copies of the slave: once
		// ours is closed the master reads what is left, then EIO.
		slave.Close()
		select {
		case <-out:
		case <-time.After(2 * time.Second): // a slave leaked elsewhere
		}
		if restore != nil {
			restore()
		}
		master.Close()
	}, nil
}

// rawMode puts the terminal fd in raw mode (if it is one), copies its
// size to the pty master and follows its changes (SIGWINCH); it returns
// what undoes that, or nil when fd is no terminal.
func rawMode(fd, master int) func() {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag = raw.Cflag&^(unix.CSIZE|unix.PARENB) | unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	resize := func() {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			unix.IoctlSetWinsize(master, unix.TIOCSWINSZ, ws) // the pty signals its foreground group
		}
	}
	resize()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, unix.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				resize()
			case <-done:
				return
			}
		}
	}()
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil && !errors.Is(err, unix.EINTR) {
		old = nil
	}
	return func() {
		signal.Stop(winch)
		close(done)
		if old != nil {
			unix.IoctlSetTermios(fd, unix.TCSETS, old)
		}
	}
}
