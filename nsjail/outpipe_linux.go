package nsjail

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// outPipe carries one output stream of a namespace sandbox to its writer.
// exec.Cmd's own copy, for a writer that is not a file, ends only at EOF,
// when every copy of the pipe's write end is closed; a copy that another
// child of this process inherited in the moment between its fork and its
// exec (Go's fork with a user namespace waits for its id maps there)
// keeps it open, and WaitDelay then closed the pipe with output still
// unread in it (seen under load in the emulated guest: a result "ok" with
// its stdout missing). Here the end is known instead: once the sandbox's
// pid 1 is reaped, its pid namespace is gone with every writer in it, so
// what it wrote is all in the pipe, and drainOutput reads it to the end
// without waiting for an EOF a stranger's copy could withhold.
type outPipe struct {
	r, w *os.File
	dst  io.Writer
	done chan struct{}
}

// outPipe returns the file the init gets for dst: dst itself if it is a
// file, else the write end of a pipe that startOutput copies to dst (or
// dst, for exec.Cmd to copy, if no pipe can be made).
func (s *Sandbox) outPipe(dst io.Writer) io.Writer {
	if f, ok := dst.(*os.File); ok {
		return f
	}
	r, w, err := os.Pipe()
	if err != nil {
		return dst
	}
	s.outs = append(s.outs, &outPipe{r: r, w: w, dst: dst, done: make(chan struct{})})
	return w
}

// startOutput closes this process's write ends once the init has its own
// (or never will) and, if it started, copies each pipe to its writer.
func (s *Sandbox) startOutput(started bool) {
	for _, o := range s.outs {
		o.w.Close()
		if !started {
			o.r.Close()
			close(o.done)
			continue
		}
		go func() {
			defer close(o.done)
			b := copyBufs.Get().(*[32 << 10]byte)
			defer copyBufs.Put(b)
			io.CopyBuffer(o.dst, onlyReader{o.r}, b[:])
		}()
	}
}

// copyBufs are the copies' buffers, pooled: io.Copy from a file allocates
// 32 KiB a stream a run (a quarter of what a daemon's run allocated).
var copyBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// onlyReader hides the file's WriteTo, which would copy through a buffer
// of its own.
type onlyReader struct{ io.Reader }

// drainOutput, once the sandbox's pid 1 is reaped, ends each copy and
// reads what is left in the pipe: a read deadline of now wakes the copy
// (Go then refuses reads outright), so the rest is read with raw
// non-blocking reads until the pipe is empty.
func (s *Sandbox) drainOutput() {
	if len(s.outs) == 0 {
		return
	}
	buf := make([]byte, 4<<10) // usually nothing is left: the copy kept up
	for _, o := range s.outs {
		o.r.SetReadDeadline(time.Now())
		<-o.done
		o.r.SetReadDeadline(time.Time{})
		if rc, err := o.r.SyscallConn(); err == nil {
			rc.Read(func(fd uintptr) bool {
				for {
					n, err := unix.Read(int(fd), buf)
					if n > 0 {
						o.dst.Write(buf[:n])
						continue
					}
					if err != unix.EINTR {
						return true // EOF, or empty (EAGAIN)
					}
				}
			})
		}
		o.r.Close()
	}
	s.outs = nil
}
