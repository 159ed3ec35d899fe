package jailinit

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The init takes the tasks files its parent sends only as one message of
// one byte with exactly the count its spec announced; any other message
// is refused, and every descriptor it carried is closed, none left open
// for the jail or the program.
func TestReceiveTasks(t *testing.T) {
	send := func(t *testing.T, payload []byte, files int) int {
		t.Helper()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		var rights []int
		for range files {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rights = append(rights, int(f.Fd()))
		}
		var oob []byte
		if len(rights) > 0 {
			oob = unix.UnixRights(rights...)
		}
		if err := unix.Sendmsg(fds[0], payload, oob, nil, 0); err != nil {
			t.Fatal(err)
		}
		return fds[1]
	}
	open := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	t.Run("the count announced", func(t *testing.T) {
		sock := send(t, []byte{0}, 3)
		fds, err := receiveTasks(sock, 3)
		if err != nil || len(fds) != 3 {
			t.Fatalf("%v %v", fds, err)
		}
		for _, fd := range fds {
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
				t.Errorf("fd %d: flags %#x, %v: want close-on-exec", fd, flags, err)
			}
			unix.Close(fd)
		}
	})
	for name, c := range map[string]struct {
		payload []byte
		files   int
	}{
		"fewer":            {[]byte{0}, 2},
		"more":             {[]byte{0}, 4},
		"none":             {[]byte{0}, 0},
		"a longer message": {[]byte{0, 1}, 3},
	} {
		t.Run(name, func(t *testing.T) {
			sock := send(t, c.payload, c.files)
			before := open()
			if fds, err := receiveTasks(sock, 3); err == nil {
				t.Fatalf("accepted %v", fds)
			}
			if after := open(); after != before {
				t.Errorf("%d fds open after the refusal, %d before: received fds left open", after, before)
			}
		})
	}
}
