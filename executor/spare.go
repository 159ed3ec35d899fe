package executor

import (
	"log/slog"
	"sync"

	"github.com/airlock-sandbox/airlock/cgroups"
)

// groups makes and removes the runs' cgroups off a cold run's critical
// path: it keeps one spare group, made ahead with the limits of the last
// run that asked (on cgroup v1 here, making one is five mkdirs and the
// limit writes: 0.3 ms), and removes a finished run's group in the
// background (0.15 ms). A spare is a fresh group that never held a task;
// it serves only a run with exactly its limits, and every group is used
// by one run only. Close removes the spare and waits for every removal;
// a supervisor killed before that leaves its groups to the next one's
// ReapStale (their names carry its identity).
type groups struct {
	parent *cgroups.Parent
	log    *slog.Logger

	mu     sync.Mutex
	spare  cgroups.Group // nil: none ready
	lim    cgroups.Limits
	making bool
	closed bool
	taken  int            // groups taken so far
	bg     sync.WaitGroup // makes and removals under way; Add only while !closed
}

// take returns a group with limits lim for one run: the spare if it has
// them, else a new one; either way, from the second run on, a spare with
// lim is made next (a one-shot process, the CLI, makes none to throw
// away).
func (s *groups) take(lim cgroups.Limits) (cgroups.Group, error) {
	s.mu.Lock()
	var g cgroups.Group
	if s.spare != nil && s.lim == lim {
		g, s.spare = s.spare, nil
	}
	s.taken++
	again := s.taken > 1
	s.mu.Unlock()
	if g == nil {
		var err error
		if g, err = s.parent.New(lim); err != nil {
			return nil, err
		}
	}
	if again {
		s.refill(lim)
	}
	return g, nil
}

// refill makes a spare with lim in the background, replacing one with
// other limits, unless one is ready or being made.
func (s *groups) refill(lim cgroups.Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.making || (s.spare != nil && s.lim == lim) {
		return
	}
	old := s.spare
	s.spare, s.making = nil, true
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if old != nil {
			s.remove(old)
		}
		g, err := s.parent.New(lim)
		s.mu.Lock()
		s.making = false
		if err == nil && !s.closed {
			s.spare, s.lim, g = g, lim, nil
		}
		s.mu.Unlock()
		if err != nil {
			// The next run makes its own, and reports the error if it
			// recurs.
			s.log.Debug("making a spare cgroup", slog.Any("error", err))
		} else if g != nil {
			s.remove(g) // closed meanwhile
		}
	}()
}

// release removes a finished run's group in the background (at once
// once closed).
func (s *groups) release(g cgroups.Group) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.bg.Add(1)
	}
	s.mu.Unlock()
	if closed {
		s.remove(g)
		return
	}
	go func() {
		defer s.bg.Done()
		s.remove(g)
	}()
}

func (s *groups) remove(g cgroups.Group) {
	if err := g.Delete(); err != nil {
		s.log.Warn("removing a run's cgroup", slog.Any("error", err))
	}
}

// close removes the spare and waits for every removal under way.
func (s *groups) close() {
	s.mu.Lock()
	s.closed = true
	g := s.spare
	s.spare = nil
	s.mu.Unlock()
	s.bg.Wait()
	if g != nil {
		s.remove(g)
	}
}
