// Package pty opens pseudo-terminals: the one --tty gives a program, and
// the ones the tests drive programs through.
package pty

import (
	"os"

	"golang.org/x/sys/unix"
)

// Open opens a new pty of the caller's devpts: its master, and its slave
// (opened through the master, TIOCGPTPEER, so no path lookup can swap
// it; neither becomes the caller's controlling terminal).
func Open() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		m.Close()
		return nil, nil, errno
	}
	return m, os.NewFile(fd, "pty"), nil
}
