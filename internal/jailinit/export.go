package jailinit

import "io"

// What the parent (package nsjail) uses of the init's side: the two
// channels' messages and constants. The names stay unexported inside
// this package, where the init's code uses them.

type (
	// Config is the jail the init builds (initConfig).
	Config = initConfig
	// Program is the part of the spec applied just before exec
	// (programConfig).
	Program = programConfig
	// Status is one message from the init on the status socket
	// (initStatus).
	Status = initStatus
)

const (
	// Env marks a process as an airlock init (initEnv).
	Env = initEnv
	// BuildEnv carries the parent's build token to the init.
	BuildEnv = buildEnv
	// Arg0 is the init's argv[0].
	Arg0 = initArg0
	// StagingDir is where the jail is staged inside the new root.
	StagingDir = stagingDir
	// JoinCgroupFD is the init's fd of the first v1 tasks file.
	JoinCgroupFD = joinCgroupFD
)

// MarkNames names the init's timing marks, in the order it takes them.
var MarkNames = initMarks

// MonotonicNS is CLOCK_MONOTONIC in ns, the clock of the init's marks.
func MonotonicNS() int64 { return monotonicNS() }

// WriteMsg sends one spec message (header and payload in one write).
func WriteMsg(w io.Writer, payload []byte) error {
	return writeMsg(w, payload)
}

// Marshal encodes c for the spec pipe.
func (c *initConfig) Marshal() []byte { return c.marshal() }

// Marshal encodes p for the spec pipe.
func (p *programConfig) Marshal() []byte { return p.marshal() }

// Marshal encodes st as one status packet.
func (st *initStatus) Marshal() []byte { return st.marshal() }

// Unmarshal decodes one status packet into st.
func (st *initStatus) Unmarshal(b []byte) error { return st.unmarshal(b) }
