package nsjail

// SendToDeadInit starts spec's init, kills it and waits until it is
// reaped, then makes the supervisor's next write to it: the spec (a cold
// build), or, when program is set, the program of a sandbox prepared
// before the kill. It returns that step's error.
func SendToDeadInit(spec Spec, program bool) error {
	s := newSandbox(&spec)
	c, err := s.launch()
	if err != nil {
		return err
	}
	defer c.close()
	if program {
		if err := s.build(c, true); err != nil {
			return err
		}
	}
	s.Kill()
	<-s.exited
	if program {
		return s.run(c)
	}
	return s.build(c, false)
}

// PreparedWaits reports whether p's reaper waits for its program
// (Spec.ReaperWaits).
func PreparedWaits(p *Prepared) bool { return p.s.waits }
