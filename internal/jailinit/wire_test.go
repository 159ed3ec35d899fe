package jailinit

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/rootfs"
	"github.com/airlock-sandbox/airlock/seccomp"
)

func wireSamples(t testing.TB) (initConfig, programConfig) {
	plan, err := rootfs.Default(rootfs.Options{TmpfsSize: 64 << 20, Extra: []rootfs.Op{
		{Kind: rootfs.KindBind, Source: "/srv/ü data", Target: "/data", ReadOnly: true, NoExec: true, Optional: true, CharDevice: true, KeepDevices: true},
		{Kind: rootfs.KindFile, Target: "/etc/motd", Data: "line\n\x00binary\xff"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := &seccomp.Filter{Profile: "default", Rules: 418, Notify: true,
		Program: seccomp.Program{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 255, K: 0xc000003e}, {Code: 6, K: 0x7fff0000}}}
	cfg := initConfig{Hostname: "box", NetNS: true, Process: true, Plan: plan, Staging: "/tmp", JoinCgroup: 5, SentCgroup: 3,
		Landlock: Landlock{ABI: 7, Paths: []LandlockPath{{Path: "/usr", Access: LandlockRead | LandlockExec}, {Path: "/x", Access: LandlockList, Optional: true}}, Net: true, Scope: true}, EgressPort: 3128, LastCap: 40, TimerSlack: 123457, SetSignals: true, SignalsIgnored: 1<<12 | 1<<14}
	prog := programConfig{Args: []string{"/bin/sh", "-c", "echo 'hi'"}, Env: []string{"A=1", "EMPTY="}, Dir: "/workspace",
		Rlimits: []Rlimit{{Resource: 7, Cur: 1024, Max: 1024}, {Resource: 4, Cur: 0, Max: ^uint64(0)}}, Seccomp: f}
	return cfg, prog
}

// What the parent writes on the spec pipe is what the init reads back,
// field for field, through the framing.
func TestWireRoundTrip(t *testing.T) {
	cfg, prog := wireSamples(t)
	var pipe bytes.Buffer
	if err := writeMsg(&pipe, cfg.marshal()); err != nil {
		t.Fatal(err)
	}
	if err := writeMsg(&pipe, prog.marshal()); err != nil {
		t.Fatal(err)
	}
	var got initConfig
	if err := readSpec(&pipe, "spec", &got); err != nil || !reflect.DeepEqual(got, cfg) {
		t.Fatalf("config: %v\n got %+v\nwant %+v", err, got, cfg)
	}
	var p programConfig
	if err := readSpec(&pipe, "program", &p); err != nil || !reflect.DeepEqual(p, prog) {
		t.Fatalf("program: %v\n got %+v\nwant %+v", err, p, prog)
	}
	// No filter, empty lists.
	var none programConfig
	if err := none.unmarshal((&programConfig{Args: []string{"x"}}).marshal()); err != nil || none.Seccomp != nil || none.Args[0] != "x" || len(none.Env) != 0 {
		t.Fatalf("%v %+v", err, none)
	}
}

// A cut, padded, foreign-version or oversized message is an error, never
// a panic or a partial config.
func TestWireRejects(t *testing.T) {
	cfg, prog := wireSamples(t)
	b := cfg.marshal()
	for cut := 0; cut < len(b); cut++ {
		var c initConfig
		if err := c.unmarshal(b[:cut]); err == nil {
			t.Fatalf("config cut at %d of %d: no error", cut, len(b))
		}
	}
	pb := prog.marshal()
	for cut := 0; cut < len(pb); cut++ {
		var p programConfig
		if err := p.unmarshal(pb[:cut]); err == nil {
			t.Fatalf("program cut at %d of %d: no error", cut, len(pb))
		}
	}
	var c initConfig
	if err := c.unmarshal(append(b, 0)); err == nil || !strings.Contains(err.Error(), "after the message") {
		t.Errorf("trailing byte: %v", err)
	}
	other := append([]byte{wireVersion + 1}, b[1:]...)
	if err := c.unmarshal(other); err == nil || !strings.Contains(err.Error(), "wire version") {
		t.Errorf("other version: %v", err)
	}
	var pipe bytes.Buffer
	writeMsg(&pipe, make([]byte, 100))
	if _, err := readMsg(&pipe, 99); err == nil {
		t.Error("a message over the limit was read")
	}
	if _, err := readMsg(bytes.NewReader([]byte{5, 0, 0, 0, 1}), 99); err == nil {
		t.Error("a short message was read")
	}
}

// Every report the init sends decodes to itself, and a cut, padded or
// foreign-version report is an error (the run then fails as a setup
// error, never as a misread report).
func TestStatusWire(t *testing.T) {
	for _, st := range []initStatus{
		{Prepared: true, Marks: []int64{1, 1 << 40, -3, 0}},
		{Ready: true, Marks: []int64{7}},
		{Ready: true, Listener: true, Marks: []int64{5, 6}},
		{Egress: true},
		{Started: true},
		{Ended: true, WaitStatus: 0x8b}, // killed by SIGSEGV, core dumped
		{Ended: true, WaitStatus: 0xff00},
		{Stage: "mount /proc", Errno: 13, Msg: "permission denied: \x00\xff ü"},
	} {
		b := st.marshal()
		var got initStatus
		if err := got.unmarshal(b); err != nil || !reflect.DeepEqual(got, st) {
			t.Fatalf("%+v: %v, got %+v", st, err, got)
		}
		for cut := 0; cut < len(b); cut++ {
			if err := new(initStatus).unmarshal(b[:cut]); err == nil {
				t.Fatalf("%+v cut at %d of %d: no error", st, cut, len(b))
			}
		}
		if err := new(initStatus).unmarshal(append(b, 0)); err == nil {
			t.Fatalf("%+v with a trailing byte: no error", st)
		}
		if err := new(initStatus).unmarshal(append([]byte{wireVersion + 1}, b[1:]...)); err == nil {
			t.Fatalf("%+v of another version: no error", st)
		}
	}
}

// The decoders never panic and never allocate past their input, whatever
// the bytes.
func FuzzWireDecode(f *testing.F) {
	cfg, prog := wireSamples(f)
	f.Add(cfg.marshal())
	f.Add(prog.marshal())
	f.Add([]byte{wireVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add((&initStatus{Prepared: true, Marks: []int64{1, 2}}).marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		var c, again initConfig
		if c.unmarshal(b) == nil {
			if err := again.unmarshal(c.marshal()); err != nil || !reflect.DeepEqual(again, c) {
				t.Errorf("config decoded from %x does not survive a round trip: %v", b, err)
			}
		}
		var p programConfig
		_ = p.unmarshal(b)
		var st, st2 initStatus
		if st.unmarshal(b) == nil {
			if err := st2.unmarshal(st.marshal()); err != nil || !reflect.DeepEqual(st2, st) {
				t.Errorf("status decoded from %x does not survive a round trip: %v", b, err)
			}
		}
	})
}
