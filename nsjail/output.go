package nsjail

import (
	"bytes"
	"strings"
	"sync"
)

// capture is an io.Writer that keeps at most limit bytes. When a write
// would pass the limit it keeps what fits, marks the stream truncated and
// calls overflow once; later writes are counted and dropped, so the
// program can be drained and the supervisor's memory stays bounded by the
// limit whatever the program prints.
type capture struct {
	mu        sync.Mutex
	limit     int64
	buf       bytes.Buffer
	truncated bool
	overflow  func()
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.limit - int64(c.buf.Len())
	if int64(len(p)) <= room {
		c.buf.Write(p)
		c.mu.Unlock()
		return len(p), nil
	}
	first := !c.truncated
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.truncated = true
	c.mu.Unlock()
	if first && c.overflow != nil {
		c.overflow()
	}
	return len(p), nil
}

// text returns the captured bytes as valid UTF-8 (invalid bytes replaced).
func (c *capture) text() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(c.buf.String(), "\uFFFD"), c.truncated
}
