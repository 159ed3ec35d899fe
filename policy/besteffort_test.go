package policy

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// best_effort reads as true (limits alone), false, a list of names or a
// comma-separated string, and writes back as it means; an unknown name
// is invalid, naming the known ones.
func TestDegradeForms(t *testing.T) {
	for doc, want := range map[string]Degrade{
		`{"best_effort": true}`:                   DegradeLimits,
		`{"best_effort": false}`:                  0,
		`{"best_effort": []}`:                     0,
		`{"best_effort": ["limits", "seccomp"]}`:  DegradeLimits | DegradeSeccomp,
		`{"best_effort": "network,landlock"}`:     DegradeNetwork | DegradeLandlock,
		"best_effort: [namespaces]\n":             DegradeNamespaces,
		"best_effort: limits, seccomp, network\n": DegradeLimits | DegradeSeccomp | DegradeNetwork,
	} {
		p, err := Parse([]byte(doc))
		if err != nil || p.BestEffort != want {
			t.Errorf("%s: %v, %v; want %v", doc, p.BestEffort, err, want)
			continue
		}
		b, _ := json.Marshal(p)
		q, err := Parse(b)
		if err != nil || q.BestEffort != want {
			t.Errorf("%s: written as %s, read back as %v, %v", doc, b, q.BestEffort, err)
		}
	}
	for _, doc := range []string{`{"best_effort": ["limits", "everything"]}`, `{"best_effort": "all"}`, `{"best_effort": ""}`, `{"best_effort": [1]}`} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "best_effort") {
			t.Errorf("%s: %v; want invalid best_effort", doc, err)
		}
	}
	if _, err := Parse([]byte(`{"best_effort": "all"}`)); err == nil || !strings.Contains(err.Error(), "limits, seccomp, namespaces, landlock, network") {
		t.Errorf("an unknown name's error does not list the names: %v", err)
	}
	for s, want := range map[string]Degrade{"": DegradeLimits, "true": DegradeLimits, "false": 0, "seccomp": DegradeSeccomp, "limits, network": DegradeLimits | DegradeNetwork} {
		if d, err := ParseDegrade(s); err != nil || d != want {
			t.Errorf("ParseDegrade(%q) = %v, %v; want %v", s, d, err, want)
		}
	}
	if f := (DegradeLimits).Flag(); f != "--best-effort" {
		t.Errorf("limits alone as a flag: %s", f)
	}
	if f := (DegradeSeccomp | DegradeLimits).Flag(); f != "--best-effort=limits,seccomp" {
		t.Errorf("limits and seccomp as a flag: %s", f)
	}
}

// best_effort waives only the controls it names: limits alone never
// drops the seccomp filter, the namespaces, Landlock or the network;
// each needs its own name, and a refusal's fix names the value that
// would have run.
func TestBestEffortWaivesOnlyWhatItNames(t *testing.T) {
	limits := func(p *Policy) { p.Memory = 64 << 20 }
	for _, c := range []struct {
		name    string
		pol     func(*Policy)
		host    *Host
		control string // the control that needs its own name
		flag    string // the fix's --best-effort value
		listed  []string
	}{
		{"seccomp", limits, host(CheckCgroup, CheckSeccomp), "seccomp", "--best-effort=limits,seccomp", []string{"memory", "seccomp"}},
		{"namespaces", limits, host(CheckCgroup, CheckUserNS), "namespaces", "--best-effort=limits,namespaces", []string{"namespaces", "memory"}},
		{"landlock", func(p *Policy) { limits(p); p.Backend, p.Net = "process", NetHost }, host(CheckCgroup, CheckLandlock), "filesystem isolation", "--best-effort=limits,landlock", []string{"filesystem isolation", "memory"}},
		{"network", func(p *Policy) { limits(p); p.Backend = "process" }, host(CheckCgroup, CheckLandlockNet), "network isolation", "--best-effort=limits,landlock,network", []string{"network isolation", "signal isolation", "memory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Policy{BestEffort: DegradeLimits}
			c.pol(&p)
			_, err := Check(p, c.host)
			var u *UnsupportedError
			if !errors.As(err, &u) || u.Control != c.control || !strings.Contains(u.Fix, c.flag) {
				t.Fatalf("best_effort limits: %v; want %s refused, the fix naming %s", err, c.control, c.flag)
			}
			p.BestEffort, err = ParseDegrade(strings.TrimPrefix(c.flag, "--best-effort="))
			if err != nil {
				t.Fatal(err)
			}
			if c.control == "namespaces" {
				p.BestEffort |= DegradeNetwork // the process backend it falls back to: UDP and such are fine here
			}
			e, err := Check(p, c.host)
			if err != nil || !slices.Equal(e.NotEnforced(), c.listed) {
				t.Fatalf("%s: %v, not enforced %q; want %q", c.flag, err, e.NotEnforced(), c.listed)
			}
		})
	}
}
