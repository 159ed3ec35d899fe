package jailinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/airlock-sandbox/airlock/internal/bpfprog"
	"github.com/airlock-sandbox/airlock/rootfs"
)

// The spec pipe (fd 3) carries two messages, initConfig then
// programConfig, in a compact binary form rather than JSON: decoding JSON
// in a fresh process (the init, every run) costs about 0.25 ms here in
// reflection caches alone, on the critical path of every start. The
// status socket's reports (initStatus) use the same form for the same
// reason (a first json.Marshal in the init: 0.1 ms), one report a packet
// of the SOCK_SEQPACKET socket, without the length header.
//
// A message is a 4-byte little-endian payload length, then the payload:
// wireVersion, then the fields in declaration order. Integers are
// varints, strings and byte strings are a uvarint length and the bytes,
// booleans one byte (0 or 1), lists a uvarint count and the elements, an
// optional filter a presence boolean. The decoder checks every length
// against what is left, so a short or corrupt message is an error, never
// a panic or a huge allocation; it also refuses trailing bytes.

// wireVersion changes with the layout: an init of another layout fails
// its read with an error naming both (build tokens catch the rest).
// Version 2: initConfig lost Ahead and Seccomp (one filter slot, in
// programConfig). Version 3: initConfig gained Landlock. Version 4:
// initConfig.EgressPort, initStatus.Egress. Version 5: initConfig.Reaper,
// programConfig.TTY, initStatus.Started, Ended and WaitStatus (the
// reaper's; cmd/airlock-spawn writes its reports in this form too).
// Version 6: initConfig.LastCap (the parent reads cap_last_cap, not the
// init). Version 7: initConfig.ReaperWaits (the waiting reaper reads its
// program in programConfig's form: cmd/airlock-spawn decodes it too).
// Version 8: initConfig.Recycle (and the reaper's "ended" may be
// "prepared" too: recycled). Version 9: initConfig.TimerSlack, SetSignals
// and SignalsIgnored. Version 10: initConfig.SignalsBlocked (and the
// reaper passes its inherited signal mask on to the program).
// Version 11: initConfig.Live.
const wireVersion = 11

// writeMsg sends one message: header and payload in a single write.
func writeMsg(w io.Writer, payload []byte) error {
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(payload)), uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

// readMsg reads one message of at most max bytes.
func readMsg(r io.Reader, max int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("message of %d bytes (at most %d)", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

type encoder struct{ b []byte }

func newEncoder() *encoder { return &encoder{b: []byte{wireVersion}} }

func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) strs(l []string) {
	e.uint(uint64(len(l)))
	for _, s := range l {
		e.str(s)
	}
}

func (e *encoder) filter(f *bpfprog.Filter) {
	e.bool(f != nil)
	if f == nil {
		return
	}
	e.str(f.Profile)
	e.int(int64(f.Rules))
	e.uint(uint64(len(f.Program)))
	e.b = f.Program.AppendRaw(e.b)
	e.bool(f.Notify)
}

// decoder reads what encoder wrote; the first error sticks and every
// later read returns zero values.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("message ends early")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) int() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length of items of at least size bytes each, checked
// against what is left.
func (d *decoder) count(size int) int {
	n := d.uint()
	if n > uint64(len(d.b)/size) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.count(1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) bool() bool {
	if len(d.b) < 1 || d.b[0] > 1 {
		d.fail(errShort)
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

func (d *decoder) smallInt() int {
	v := d.int()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(fmt.Errorf("integer %d out of range", v))
		return 0
	}
	return int(v)
}

func (d *decoder) strs() []string {
	l := make([]string, d.count(1))
	for i := range l {
		l[i] = d.str()
	}
	return l
}

func (d *decoder) filter() *bpfprog.Filter {
	if !d.bool() {
		return nil
	}
	f := &bpfprog.Filter{Profile: d.str(), Rules: d.smallInt()}
	n := 8 * d.count(8)
	f.Program, _ = bpfprog.ParseRaw(d.b[:n]) // whole instructions: n is a multiple of 8
	d.b = d.b[n:]
	f.Notify = d.bool()
	return f
}

func newDecoder(b []byte) *decoder {
	d := &decoder{b: b}
	if len(b) == 0 || b[0] != wireVersion {
		v := -1
		if len(b) > 0 {
			v = int(b[0])
		}
		d.fail(fmt.Errorf("wire version %d, this init reads %d (an init of another airlock?)", v, wireVersion))
		return d
	}
	d.b = b[1:]
	return d
}

// end returns the decoding error, or one for trailing bytes.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the message", len(d.b))
	}
	return d.err
}

func (c *initConfig) marshal() []byte {
	e := newEncoder()
	e.str(c.Hostname)
	e.bool(c.NetNS)
	e.bool(c.Process)
	e.str(c.Plan.RootOptions)
	e.uint(uint64(len(c.Plan.Ops)))
	for _, op := range c.Plan.Ops {
		e.str(string(op.Kind))
		e.str(op.Source)
		e.str(op.Target)
		e.str(op.Options)
		e.str(op.Data)
		e.bool(op.ReadOnly)
		e.bool(op.NoExec)
		e.bool(op.Optional)
		e.bool(op.CharDevice)
		e.bool(op.KeepDevices)
	}
	e.str(c.Staging)
	e.int(int64(c.JoinCgroup))
	e.int(int64(c.SentCgroup))
	e.landlock(c.Landlock)
	e.int(int64(c.EgressPort))
	e.bool(c.Reaper)
	e.int(int64(c.LastCap))
	e.bool(c.ReaperWaits)
	e.strs(c.Recycle)
	e.uint(c.TimerSlack)
	e.bool(c.SetSignals)
	e.uint(c.SignalsIgnored)
	e.uint(c.SignalsBlocked)
	e.bool(c.Live)
	return e.b
}

func (c *initConfig) unmarshal(b []byte) error {
	d := newDecoder(b)
	c.Hostname = d.str()
	c.NetNS = d.bool()
	c.Process = d.bool()
	c.Plan.RootOptions = d.str()
	c.Plan.Ops = make([]rootfs.Op, d.count(10)) // an op is at least 10 bytes
	for i := range c.Plan.Ops {
		op := &c.Plan.Ops[i]
		op.Kind = rootfs.Kind(d.str())
		op.Source, op.Target, op.Options, op.Data = d.str(), d.str(), d.str(), d.str()
		op.ReadOnly, op.NoExec, op.Optional, op.CharDevice, op.KeepDevices = d.bool(), d.bool(), d.bool(), d.bool(), d.bool()
	}
	c.Staging = d.str()
	c.JoinCgroup = d.smallInt()
	c.SentCgroup = d.smallInt()
	c.Landlock = d.landlock()
	c.EgressPort = d.smallInt()
	c.Reaper = d.bool()
	c.LastCap = d.smallInt()
	c.ReaperWaits = d.bool()
	if r := d.strs(); len(r) > 0 {
		c.Recycle = r
	}
	c.TimerSlack = d.uint()
	c.SetSignals = d.bool()
	c.SignalsIgnored = d.uint()
	c.SignalsBlocked = d.uint()
	c.Live = d.bool()
	return d.end()
}

func (e *encoder) landlock(l Landlock) {
	e.int(int64(l.ABI))
	e.uint(uint64(len(l.Paths)))
	for _, p := range l.Paths {
		e.str(p.Path)
		e.uint(uint64(p.Access))
		e.bool(p.Optional)
	}
	e.bool(l.Net)
	e.bool(l.Scope)
}

func (d *decoder) landlock() Landlock {
	l := Landlock{ABI: d.smallInt()}
	if n := d.count(3); n > 0 { // a rule is at least 3 bytes
		l.Paths = make([]LandlockPath, n)
		for i := range l.Paths {
			l.Paths[i] = LandlockPath{Path: d.str(), Access: LandlockAccess(d.uint()), Optional: d.bool()}
		}
	}
	l.Net, l.Scope = d.bool(), d.bool()
	return l
}

func (p *programConfig) marshal() []byte {
	e := newEncoder()
	e.strs(p.Args)
	e.strs(p.Env)
	e.str(p.Dir)
	e.uint(uint64(len(p.Rlimits)))
	for _, r := range p.Rlimits {
		e.int(int64(r.Resource))
		e.uint(r.Cur)
		e.uint(r.Max)
	}
	e.filter(p.Seccomp)
	e.bool(p.TTY)
	return e.b
}

func (p *programConfig) unmarshal(b []byte) error {
	d := newDecoder(b)
	p.Args = d.strs()
	p.Env = d.strs()
	p.Dir = d.str()
	p.Rlimits = make([]Rlimit, d.count(3))
	for i := range p.Rlimits {
		p.Rlimits[i] = Rlimit{Resource: d.smallInt(), Cur: d.uint(), Max: d.uint()}
	}
	p.Seccomp = d.filter()
	p.TTY = d.bool()
	return d.end()
}

func (st *initStatus) marshal() []byte {
	e := newEncoder()
	e.bool(st.Ready)
	e.bool(st.Prepared)
	e.bool(st.Listener)
	e.bool(st.Started)
	e.bool(st.Ended)
	e.uint(uint64(st.WaitStatus))
	e.str(st.Stage)
	e.int(int64(st.Errno))
	e.str(st.Msg)
	e.uint(uint64(len(st.Marks)))
	for _, m := range st.Marks {
		e.int(m)
	}
	e.bool(st.Egress)
	return e.b
}

func (st *initStatus) unmarshal(b []byte) error {
	d := newDecoder(b)
	st.Ready, st.Prepared, st.Listener = d.bool(), d.bool(), d.bool()
	st.Started, st.Ended = d.bool(), d.bool()
	if ws := d.uint(); ws <= math.MaxUint32 {
		st.WaitStatus = uint32(ws)
	} else {
		d.fail(errors.New("wait status out of range"))
	}
	st.Stage = d.str()
	st.Errno = d.smallInt()
	st.Msg = d.str()
	if n := d.count(1); n > 0 { // a varint is at least one byte
		st.Marks = make([]int64, n)
		for i := range st.Marks {
			st.Marks[i] = d.int()
		}
	}
	st.Egress = d.bool()
	return d.end()
}
