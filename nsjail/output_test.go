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

// Output that is not valid UTF-8 is carried without loss: base64, with
// its encoding named; a truncated stream cut inside a character loses
// only that character's first bytes, not its UTF-8 form.
func TestOutputNeverLossy(t *testing.T) {
	c := &capture{limit: 10}
	c.Write([]byte{'a', 0xff, 'b'})
	s, trunc := c.text()
	if s != "a\xffb" || trunc {
		t.Fatalf("got %q %v", s, trunc)
	}
	text, enc := encodeOutput(s, trunc)
	if enc != EncodingBase64 || string(Bytes(text, enc)) != "a\xffb" {
		t.Fatalf("encoded %q %q", text, enc)
	}
	if text, enc := encodeOutput("héllo", false); text != "héllo" || enc != "" {
		t.Fatalf("valid UTF-8 encoded: %q %q", text, enc)
	}
	if text, enc := encodeOutput("ab\xc3", true); text != "ab" || enc != "" {
		t.Fatalf("a truncated stream cut inside a character: %q %q", text, enc)
	}
	if text, enc := encodeOutput("ab\xc3", false); enc != EncodingBase64 || string(Bytes(text, enc)) != "ab\xc3" {
		t.Fatalf("a stream that ends inside a character, not cut: %q %q", text, enc)
	}
}
