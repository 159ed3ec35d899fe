//go:build linux

package nsjail

import (
	"fmt"
	"net"
	"os"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// keepEgressListener takes the listener the init sent (its fd from an
// SCM_RIGHTS message): kept for the program's start, or closed at once
// if the init is gone already (releaseNamespaces closes a kept one that
// was never served).
func (s *Sandbox) keepEgressListener(fd int) error {
	f := os.NewFile(uintptr(fd), "egress")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.egressSent = true
	select {
	case <-s.exited:
		// A cold sandbox goes on to its program without waiting for us:
		// it may have ended before we read this.
		ln.Close()
	default:
		if s.egressLn != nil {
			ln.Close()
			return fmt.Errorf("a second egress listener")
		}
		s.egressLn = ln
	}
	return nil
}

// checkEgressListener fails closed when the init was to make a listener
// and reported prepared without sending it.
func (s *Sandbox) checkEgressListener() error {
	if s.spec.EgressPort == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.egressSent {
		return &policy.SetupError{Stage: "egress listener", Err: fmt.Errorf("the init reported prepared without the listener on 127.0.0.1:%d", s.spec.EgressPort)}
	}
	return nil
}

// serveEgress starts the spec's proxy on the kept listener: the program
// is about to run. Without a proxy the listener is closed (connections
// are refused).
func (s *Sandbox) serveEgress() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ln := s.egressLn
	if ln == nil {
		return
	}
	s.egressLn = nil
	if s.spec.Egress == nil {
		ln.Close()
		return
	}
	go s.spec.Egress.Serve(ln)
}

// closeEgress ends the spec's proxy, if any, and returns its log.
func (s *Sandbox) closeEgress() ([]egress.Conn, int) {
	if s.spec.Egress == nil {
		return nil, 0
	}
	return s.spec.Egress.Close()
}

// dropEgressListener closes a listener that was never served.
func (s *Sandbox) dropEgressListener() {
	s.mu.Lock()
	ln := s.egressLn
	s.egressLn = nil
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
}
