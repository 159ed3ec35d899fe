package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Degrade is the set of controls a policy's best_effort lets a run
// degrade where the host (or the backend) cannot enforce them, as
// bwrap's per-control --*-try flags do. Each is named on purpose: a
// caller who accepted rlimits for memory did not accept the loss of the
// syscall filter. The zero value degrades nothing: an unmet control is
// refused. Whatever is degraded is listed in the result's not_enforced.
//
// In a policy document best_effort is true (DegradeLimits alone, the
// meaning it always had for limits), false, a list of names
// (["limits", "seccomp"]) or the same names in one comma-separated
// string ("limits,seccomp"); the CLI's --best-effort takes the same.
type Degrade uint8

const (
	// DegradeLimits: explicit memory, pids and CPU limits (and their
	// accounting) by per-process rlimits, or not at all for a CPU rate,
	// where no cgroup can be had. What best_effort alone means.
	DegradeLimits Degrade = 1 << iota
	// DegradeSeccomp: the run goes on without its syscall filter where
	// the host cannot load one.
	DegradeSeccomp
	// DegradeNamespaces: the process backend (no namespaces) where the
	// jail cannot run, and the inside ids and terminal it cannot give.
	DegradeNamespaces
	// DegradeLandlock: the process backend's filesystem and signal
	// isolation where the kernel lacks the Landlock ABI for them.
	DegradeLandlock
	// DegradeNetwork: network (and socket) isolation the backend or the
	// host cannot give.
	DegradeNetwork
)

// degradeNames are the names of the Degrade bits, in bit order.
var degradeNames = [...]string{"limits", "seccomp", "namespaces", "landlock", "network"}

// Has reports whether d lets the run degrade every control in c.
func (d Degrade) Has(c Degrade) bool { return c != 0 && d&c == c }

// Names lists d's controls by name, in a fixed order.
func (d Degrade) Names() []string {
	var out []string
	for i, n := range degradeNames {
		if d&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// String is d as --best-effort takes it: "limits,seccomp"; "" when empty.
func (d Degrade) String() string { return strings.Join(d.Names(), ",") }

// Flag is d as the CLI flag that asks for it: "--best-effort" for
// limits alone, else "--best-effort=limits,seccomp".
func (d Degrade) Flag() string {
	if d == DegradeLimits {
		return "--best-effort"
	}
	return "--best-effort=" + d.String()
}

// ParseDegrade reads --best-effort's value: "true" (or "") is limits
// alone, "false" nothing, else a comma-separated list of control names.
func ParseDegrade(s string) (Degrade, error) {
	switch strings.TrimSpace(s) {
	case "", "true":
		return DegradeLimits, nil
	case "false":
		return 0, nil
	}
	var d Degrade
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		i := slices.Index(degradeNames[:], n)
		if i < 0 {
			return 0, fmt.Errorf("best_effort: %q is not a control it can degrade; the controls are %s (alone it means limits)", n, strings.Join(degradeNames[:], ", "))
		}
		d |= 1 << i
	}
	return d, nil
}

// MarshalJSON writes DegradeLimits alone as true (what the documents
// written before the names say), anything else as a list of names.
func (d Degrade) MarshalJSON() ([]byte, error) {
	switch d {
	case 0:
		return []byte("false"), nil
	case DegradeLimits:
		return []byte("true"), nil
	}
	return json.Marshal(d.Names())
}

// UnmarshalJSON accepts true, false, a list of names or a string of
// comma-separated names.
func (d *Degrade) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case bool:
		*d = 0
		if v {
			*d = DegradeLimits
		}
		return nil
	case string:
		if strings.TrimSpace(v) == "" {
			return Invalid("best_effort", "an empty string names no control; write true for limits, or the controls: %s", strings.Join(degradeNames[:], ", "))
		}
		p, err := ParseDegrade(v)
		if err != nil {
			return Invalid("best_effort", "%s", strings.TrimPrefix(err.Error(), "best_effort: "))
		}
		*d = p
		return nil
	case []any:
		var names []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return typeError(b, reflect.TypeFor[Degrade]())
			}
			names = append(names, s)
		}
		if len(names) == 0 {
			*d = 0
			return nil
		}
		p, err := ParseDegrade(strings.Join(names, ","))
		if err != nil {
			return Invalid("best_effort", "%s", strings.TrimPrefix(err.Error(), "best_effort: "))
		}
		*d = p
		return nil
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*d = 0
		return nil
	}
	return typeError(b, reflect.TypeFor[Degrade]())
}

// degradeFor is the best_effort name that waives an unmet control, 0 for
// one no name waives. A control this does not know is never waived.
func degradeFor(control string) Degrade {
	switch control {
	case "memory", "pids", "cpus":
		return DegradeLimits
	case "seccomp":
		return DegradeSeccomp
	case "namespaces", "inside ids", "terminal":
		return DegradeNamespaces
	case "filesystem isolation", "signal isolation":
		return DegradeLandlock
	case "network isolation", "udp isolation", "unix socket isolation":
		return DegradeNetwork
	}
	return 0
}

// DegradeOf is the best_effort control that waives an unmet control
// named as a result's not_enforced names it ("memory": DegradeLimits); 0
// for one it cannot waive.
func DegradeOf(control string) Degrade { return degradeFor(control) }
