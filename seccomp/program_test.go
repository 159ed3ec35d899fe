package seccomp

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestProgramJSONRoundTrip(t *testing.T) {
	p := Program{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}, {Code: 0x06, K: 0x7fff0000}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Program
	if err := json.Unmarshal(b, &q); err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip: %v %v (%s)", q, err, b)
	}
	if err := json.Unmarshal([]byte(`"AAAA"`), &q); err == nil {
		t.Fatal("accepted a partial instruction")
	}
}
