package server

import (
	"errors"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// Every field a request may set can tighten the served policy and never
// loosen it: a value past the served one is ErrInvalid naming the field.
func TestTightenEachField(t *testing.T) {
	served := policy.Policy{Timeout: policy.Duration(10 * time.Second), CPUTime: policy.Duration(5 * time.Second),
		Memory: 256 << 20, Pids: 64, CPUs: 1, FileSize: 1 << 20, OpenFiles: 256, MaxOutput: 64 << 10, Net: policy.NetLoopback}
	if err := served.Validate(); err != nil {
		t.Fatal(err)
	}
	d := func(v time.Duration) *policy.Duration { x := policy.Duration(v); return &x }
	sz := func(v int64) *policy.Size { x := policy.Size(v); return &x }
	n := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	net := func(v policy.Net) *policy.Net { return &v }
	for _, c := range []struct {
		field        string
		tight, loose Overrides
		check        func(p policy.Policy) bool
	}{
		{"timeout", Overrides{Timeout: d(time.Second)}, Overrides{Timeout: d(11 * time.Second)},
			func(p policy.Policy) bool { return p.Timeout == policy.Duration(time.Second) }},
		{"cpu_time", Overrides{CPUTime: d(time.Second)}, Overrides{CPUTime: d(6 * time.Second)},
			func(p policy.Policy) bool { return p.CPUTime == policy.Duration(time.Second) }},
		{"memory", Overrides{Memory: sz(32 << 20)}, Overrides{Memory: sz(257 << 20)},
			func(p policy.Policy) bool { return p.Memory == 32<<20 }},
		{"pids", Overrides{Pids: n(8)}, Overrides{Pids: n(65)},
			func(p policy.Policy) bool { return p.Pids == 8 }},
		{"cpus", Overrides{CPUs: f(0.5)}, Overrides{CPUs: f(1.5)},
			func(p policy.Policy) bool { return p.CPUs == 0.5 }},
		{"file_size", Overrides{FileSize: sz(4096)}, Overrides{FileSize: sz(2 << 20)},
			func(p policy.Policy) bool { return p.FileSize == 4096 }},
		{"open_files", Overrides{OpenFiles: n(32)}, Overrides{OpenFiles: n(257)},
			func(p policy.Policy) bool { return p.OpenFiles == 32 }},
		{"max_output", Overrides{MaxOutput: sz(1024)}, Overrides{MaxOutput: sz(65<<10 + 1)},
			func(p policy.Policy) bool { return p.MaxOutput == 1024 }},
		{"net", Overrides{Net: net(policy.NetNone)}, Overrides{Net: net(policy.NetHost)},
			func(p policy.Policy) bool { return p.Net == policy.NetNone }},
	} {
		t.Run(c.field, func(t *testing.T) {
			p := served
			if err := tighten(&p, &c.tight); err != nil || !c.check(p) {
				t.Fatalf("tighten: %v, policy %+v", err, p)
			}
			p = served
			err := tighten(&p, &c.loose)
			var inv *policy.InvalidError
			if !errors.As(err, &inv) || inv.Field != "policy."+c.field {
				t.Fatalf("loosen: %v, want ErrInvalid naming policy.%s", err, c.field)
			}
			if p.Validate(); !equalPolicy(p, served) {
				t.Fatalf("a refused override changed the policy: %+v", p)
			}
		})
	}
	// A server serving an allow-list: a request may close the network
	// (the served rules go with it), never open it to the host.
	allow, err := policy.Parse([]byte(`{"net": {"allow": ["127.0.0.1:8080"]}}`))
	if err != nil || allow.Network() != policy.NetAllow {
		t.Fatalf("served net allow: %v %+v", err, allow)
	}
	for _, tight := range []policy.Net{policy.NetNone, policy.NetLoopback} {
		p := allow
		if err := tighten(&p, &Overrides{Net: net(tight)}); err != nil || p.Network() != tight || p.Validate() != nil {
			t.Fatalf("net allow tightened to %s: %v, %+v (valid: %v)", tight, err, p, p.Validate())
		}
	}
	if p := allow; tighten(&p, &Overrides{Net: net(policy.NetHost)}) == nil {
		t.Fatal("net allow loosened to host")
	}
	// Unlimited served values (cpu_time, cpus none) take any request's.
	open := policy.Default()
	if err := tighten(&open, &Overrides{CPUTime: d(time.Hour), CPUs: f(64)}); err != nil || open.CPUs != 64 {
		t.Fatalf("unlimited served: %v", err)
	}
	// Default memory and pids are ceilings too.
	def := policy.Default()
	if err := tighten(&def, &Overrides{Memory: sz(policy.DefaultMemory + 1)}); err == nil {
		t.Fatal("memory above the default ceiling accepted")
	}
	if err := tighten(&def, &Overrides{Pids: n(policy.DefaultPids + 1)}); err == nil {
		t.Fatal("pids above the default ceiling accepted")
	}
	// Nonsense values are refused whatever the ceiling.
	for _, o := range []Overrides{{Timeout: d(0)}, {Memory: sz(1)}, {Pids: n(0)}, {CPUs: f(-1)}, {OpenFiles: n(3)}, {Net: net("wifi")}} {
		p := served
		if err := tighten(&p, &o); !errors.Is(err, policy.ErrInvalid) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func equalPolicy(a, b policy.Policy) bool {
	return a.Timeout == b.Timeout && a.CPUTime == b.CPUTime && a.Memory == b.Memory && a.Pids == b.Pids && a.CPUs == b.CPUs &&
		a.FileSize == b.FileSize && a.OpenFiles == b.OpenFiles && a.MaxOutput == b.MaxOutput && a.Net == b.Net
}
