//go:build linux

package jailinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// sendEgressListener makes the egress proxy's listener, a TCP socket
// on 127.0.0.1:port in the sandbox's network namespace (lo is up), and
// sends it to the parent on the status socket; the init keeps no copy,
// so the program never holds it (and cannot bind the port: the
// listener keeps it). port 0: nothing to do.
//
// Preconditions: runs in the init, in the jail's network namespace,
// after lo is up and before confine (which marks every fd close-on-exec).
func sendEgressListener(port int) error {
	if port == 0 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return err
	}
	return unix.Sendmsg(statusFD, (&initStatus{Egress: true}).marshal(), unix.UnixRights(fd), nil, 0)
}
