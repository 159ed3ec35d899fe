//go:build linux

package cgroups

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The cgroup files are read and written with plain syscalls, not
// os.File: an os.File of a kernfs file registers with the runtime's
// poller (two epoll_ctl calls a file), and a run reads several; the
// serving path did four reads a run.

func writeFile(path, value string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	// A signal interrupts a write that would otherwise succeed: v1's
	// memory.limit_in_bytes answers EINTR whenever one is pending as the
	// write starts (mem_cgroup_resize_max), and this runtime signals its
	// own threads (preemption). Such a write changed nothing: again.
	var n int
	for {
		if n, err = unix.Write(fd, []byte(value)); err != unix.EINTR {
			break
		}
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil && n != len(value) {
		err = syscall.EIO
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// readSmall reads a file of at most a page (the counters' files).
func readSmall(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [4096]byte
	got := 0
	for got < len(buf) {
		n, err := unix.Read(fd, buf[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		got += n
	}
	return string(buf[:got]), nil
}

func readInt(path string) (int64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(b), 10, 64)
}

// readKey returns the value of "key value" in a flat keyed file
// (memory.events, cpu.stat, memory.oom_control).
func readKey(path, key string) (int64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(b) {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// pids lists the processes in a cgroup directory.
func pids(dir string) ([]int, error) {
	b, err := os.ReadFile(dir + "/cgroup.procs")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// rmdirWhenEmpty removes a cgroup directory, retrying while the kernel
// still counts dying tasks (EBUSY) for up to about two seconds.
func rmdirWhenEmpty(dir string) error {
	var err error
	for i := 0; i < 100; i++ {
		err = unix.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &os.PathError{Op: "rmdir", Path: dir, Err: err}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
