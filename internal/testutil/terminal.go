package testutil

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/pty"
	"golang.org/x/sys/unix"
)

// AtTerminal starts cmd as the session leader of a new pty (its
// controlling terminal, rows x cols when both are set), types input,
// and waits up to a minute for it to end. It returns everything cmd
// wrote to the terminal, carriage returns removed; cmd.ProcessState has
// its exit. A run that does not end is killed and fails t.
func AtTerminal(t *testing.T, cmd *exec.Cmd, input string, rows, cols uint16) string {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if rows > 0 && cols > 0 {
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	err = cmd.Start()
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return // EIO once the last holder of the slave side is gone
			}
		}
	}()
	master.Write([]byte(input))
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		<-read
		t.Fatalf("%v at a terminal did not end; output %q", cmd.Args, out.String())
	}
	<-read
	return strings.ReplaceAll(out.String(), "\r", "")
}
