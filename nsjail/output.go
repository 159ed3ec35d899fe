package nsjail

import (
	"io"
	"strings"
	"sync"
)

// smallOutput is the first allocation of a capture; most programs print
// less. Past it the buffer grows once, straight to the cap.
const smallOutput = 64 << 10

// capture is an io.Writer that keeps at most limit bytes. When a write
// would pass the limit it keeps what fits, marks the stream truncated and
// calls overflow once; later writes are dropped, so the program can be
// drained. The buffer grows in at most two exact steps and the final
// string shares it, so the supervisor holds about limit bytes per stream
// whatever the program prints.
type capture struct {
	mu        sync.Mutex
	limit     int64
	buf       strings.Builder
	truncated bool
	overflow  func()
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	keep := min(int64(len(p)), c.limit-int64(c.buf.Len()))
	if keep > 0 {
		c.reserve(int(keep))
		c.buf.Write(p[:keep])
	}
	first := keep < int64(len(p)) && !c.truncated
	if keep < int64(len(p)) {
		c.truncated = true
	}
	c.mu.Unlock()
	if first && c.overflow != nil {
		c.overflow()
	}
	return len(p), nil
}

// reserve makes room for n more bytes. strings.Builder.Grow allocates
// 2*cap+n, so growing an empty builder is exact, and the one later step
// lands at most at limit plus twice the small first buffer.
func (c *capture) reserve(n int) {
	if c.buf.Cap()-c.buf.Len() >= n {
		return
	}
	if c.buf.Cap() == 0 && n <= smallOutput {
		c.buf.Grow(int(min(c.limit, smallOutput)))
		return
	}
	c.buf.Grow(int(c.limit) - c.buf.Len())
}

// text returns the captured bytes, as they were written (encodeOutput
// makes them a result's string).
func (c *capture) text() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String(), c.truncated
}

// streamCap passes at most left bytes on to w, the caller's writer of a
// stream that is not captured (Spec.LimitStreams); past it the rest is
// dropped and overflow is called once.
type streamCap struct {
	mu        sync.Mutex
	w         io.Writer
	left      int64
	truncated bool
	overflow  func()
}

func (c *streamCap) Write(p []byte) (int, error) {
	c.mu.Lock()
	keep := min(int64(len(p)), c.left)
	c.left -= keep
	first := keep < int64(len(p)) && !c.truncated
	if keep < int64(len(p)) {
		c.truncated = true
	}
	var err error
	if keep > 0 {
		_, err = c.w.Write(p[:keep])
	}
	c.mu.Unlock()
	if first && c.overflow != nil {
		c.overflow()
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// cut reports whether the stream passed its cap.
func (c *streamCap) cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}
