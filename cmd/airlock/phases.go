package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// phasesEnv names a file to which the CLI writes where a run's time went
// (BenchmarkCLIPhases reads it; docs/performance.md): one line a step,
// its name and the CLOCK_MONOTONIC reading in ms when it ended. The
// caller's own reading before it started the CLI gives the process start
// (the same clock). The CLI's own steps are marked here; the executor's
// and the jail's come from their debug "phase" records. Names and times
// only, never payload. Unset, none of this runs.
const phasesEnv = "AIRLOCK_PHASES"

// phases is the trace of this process, nil unless phasesEnv is set.
var phases = newPhaseTrace(os.Getenv(phasesEnv))

type phaseTrace struct {
	file string
	mu   sync.Mutex
	buf  []byte
	// jailStart is the jail's start (its "since_start" base), from the
	// first jail record, which nsjail logs as the step happens.
	jailStart int64
}

func newPhaseTrace(file string) *phaseTrace {
	if file == "" {
		return nil
	}
	return &phaseTrace{file: file}
}

func monoNS() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// mark records that the CLI's step name ended now.
func (p *phaseTrace) mark(name string) {
	if p != nil {
		p.add(name, monoNS())
	}
}

func (p *phaseTrace) add(name string, ns int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = fmt.Appendf(p.buf, "%s %.3f\n", name, float64(ns)/1e6)
}

// write puts the trace in its file (at exit).
func (p *phaseTrace) write() {
	if p != nil {
		p.mark("exit")
		_ = os.WriteFile(p.file, p.buf, 0o600)
	}
}

// logger is the executor's Logger with the trace on: it keeps the
// "phase" debug records and drops the rest.
func (p *phaseTrace) logger() *slog.Logger {
	if p == nil {
		return nil
	}
	return slog.New(p)
}

func (p *phaseTrace) Enabled(_ context.Context, l slog.Level) bool { return l == slog.LevelDebug }
func (p *phaseTrace) WithAttrs([]slog.Attr) slog.Handler           { return p }
func (p *phaseTrace) WithGroup(string) slog.Handler                { return p }

// Handle keeps a phase record: the executor's are logged as they happen
// ("since_execute"); the jail's carry their time since its start
// ("since_start"), and its init's steps are logged after the fact.
func (p *phaseTrace) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "phase" {
		return nil
	}
	now := monoNS()
	var name string
	var since time.Duration
	jail := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "phase":
			name = a.Value.String()
		case "since_start":
			since, jail = a.Value.Duration(), true
		}
		return true
	})
	if !jail {
		p.add(name, now)
		return nil
	}
	p.mu.Lock()
	if p.jailStart == 0 {
		p.jailStart = now - int64(since)
	}
	at := p.jailStart + int64(since)
	p.mu.Unlock()
	p.add("jail-"+name, at)
	return nil
}
