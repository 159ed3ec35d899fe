package nsjail

import (
	"bytes"
	"testing"
)

func TestCaptureKeepsPrefixAndOverflowsOnce(t *testing.T) {
	calls := 0
	c := &capture{limit: 100_000, overflow: func() { calls++ }}
	chunk := bytes.Repeat([]byte("x"), 30_000)
	for i := 0; i < 10; i++ {
		if n, err := c.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	s, trunc := c.text()
	if len(s) != 100_000 || !trunc || calls != 1 {
		t.Fatalf("kept %d bytes, truncated %v, overflow called %d times", len(s), trunc, calls)
	}
	if c.buf.Cap() > 100_000+2*smallOutput {
		t.Fatalf("buffer capacity %d exceeds the cap plus twice the first buffer", c.buf.Cap())
	}
}

func TestCaptureReplacesInvalidUTF8(t *testing.T) {
	c := &capture{limit: 10}
	c.Write([]byte{'a', 0xff, 'b'})
	if s, trunc := c.text(); s != "a\uFFFDb" || trunc {
		t.Fatalf("got %q %v", s, trunc)
	}
}
