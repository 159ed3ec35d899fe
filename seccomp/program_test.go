package seccomp

import (
	"reflect"
	"testing"
)

// The raw form (the spec pipe's and the on-disk cache's) round-trips,
// and a cut instruction is refused, never read as a shorter program.
func TestProgramRawRoundTrip(t *testing.T) {
	p := Program{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}, {Code: 0x06, K: 0x7fff0000}}
	raw := p.AppendRaw(nil)
	if len(raw) != 8*len(p) {
		t.Fatalf("raw form is %d bytes for %d instructions", len(raw), len(p))
	}
	q, err := ParseRaw(raw)
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip: %v %v", q, err)
	}
	if _, err := ParseRaw(raw[:len(raw)-3]); err == nil {
		t.Fatal("accepted a partial instruction")
	}
}
