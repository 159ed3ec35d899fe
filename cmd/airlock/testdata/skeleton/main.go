// Command skeleton is BenchmarkColdStart's "Go skeleton" row: the least
// a cold start shaped like airlock's costs, with none of the sandbox. A
// static Go process (the CLI's stand-in) starts itself again in new user,
// pid, net, mount, ipc, uts and cgroup namespaces (the init's stand-in,
// its parent's uid mapped to 0), which execs the program; the first waits
// for it and exits with its status. No mounts, filter, cgroup, Landlock,
// reaper, policy or result: what is left of a run once those are gone.
// With -mounts, the child first makes the root filesystem the benchmark
// asks of bwrap, with the mounts bwrap 0.8 makes for it, in its order
// (read-only binds of /usr, /bin, /lib, /lib64 and /etc; /proc with
// /proc/irq and /proc/bus read-only; a /dev of six device binds, devpts
// and links; tmpfs /tmp and /workspace; pivot_root): bwrap's work, from
// a Go process instead of a C one.
//
//	skeleton [-mounts] PROGRAM [ARGS...]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const childArg0 = "skeleton-child"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: skeleton PROGRAM [ARGS...]")
		os.Exit(2)
	}
	if os.Args[0] == childArg0 {
		argv := os.Args[1:]
		if argv[0] == "-mounts" {
			argv = argv[1:]
			if err := mounts(); err != nil {
				fmt.Fprintln(os.Stderr, "skeleton: mounts:", err)
				os.Exit(125)
			}
		}
		err := syscall.Exec(argv[0], argv, os.Environ())
		fmt.Fprintln(os.Stderr, "skeleton: exec:", err)
		os.Exit(127)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "skeleton:", err)
		os.Exit(125)
	}
	pid, err := syscall.ForkExec(exe, append([]string{childArg0}, os.Args[1:]...), &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS |
				syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "skeleton: start:", err)
		os.Exit(125)
	}
	var ws syscall.WaitStatus
	for {
		if _, err = syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	if err != nil || !ws.Exited() {
		fmt.Fprintln(os.Stderr, "skeleton: wait:", err, ws)
		os.Exit(125)
	}
	os.Exit(ws.ExitStatus())
}

// mounts makes bwrap's root filesystem for the benchmark's bwrap row,
// with bwrap's system calls, in this process's new mount namespace.
func mounts() error {
	const rec, bind, ro = syscall.MS_REC, syscall.MS_BIND, syscall.MS_RDONLY
	const nosuid, nodev, noexec, remount = syscall.MS_NOSUID, syscall.MS_NODEV, syscall.MS_NOEXEC, syscall.MS_REMOUNT
	var err error
	mount := func(src, dst, fstype string, flags uintptr, data string) {
		if err == nil {
			if e := syscall.Mount(src, dst, fstype, flags, data); e != nil {
				err = fmt.Errorf("mount %s on %s: %w", src, dst, e)
			}
		}
	}
	mkdir := func(p string) {
		if err == nil {
			if e := syscall.Mkdir(p, 0o755); e != nil {
				err = fmt.Errorf("mkdir %s: %w", p, e)
			}
		}
	}
	do := func(what string, e error) {
		if err == nil && e != nil {
			err = fmt.Errorf("%s: %w", what, e)
		}
	}
	mount("", "/", "", rec|syscall.MS_SLAVE, "")
	mount("tmpfs", "/tmp", "tmpfs", nosuid|nodev, "")
	do("chdir", syscall.Chdir("/tmp"))
	mkdir("newroot")
	mount("newroot", "newroot", "", bind|rec, "")
	mkdir("oldroot")
	do("pivot_root", syscall.PivotRoot("/tmp", "oldroot"))
	do("chdir", syscall.Chdir("/"))
	roBind := func(src, dst string, extra uintptr) {
		mount(src, dst, "", bind|rec, "")
		mount("none", dst, "", ro|nosuid|nodev|remount|bind|extra, "")
	}
	for _, d := range []string{"/usr", "/bin", "/lib", "/lib64", "/etc"} {
		src := d
		if r, e := filepath.EvalSymlinks(d); e == nil {
			src = r
		}
		mkdir("/newroot" + d)
		roBind("/oldroot"+src, "/newroot"+d, 0)
	}
	mkdir("/newroot/proc")
	mount("proc", "/newroot/proc", "proc", nosuid|nodev|noexec, "")
	for _, d := range []string{"/newroot/proc/irq", "/newroot/proc/bus"} {
		roBind(d, d, noexec)
	}
	mkdir("/newroot/dev")
	mount("tmpfs", "/newroot/dev", "tmpfs", nosuid|nodev, "mode=0755")
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		f, e := os.Create("/newroot/dev/" + n)
		do("create", e)
		if f != nil {
			f.Close()
		}
		mount("/oldroot/dev/"+n, "/newroot/dev/"+n, "", bind|rec, "")
		mount("none", "/newroot/dev/"+n, "", nosuid|remount|bind, "")
	}
	for link, target := range map[string]string{"stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "fd": "/proc/self/fd", "core": "/proc/kcore"} {
		do("symlink", syscall.Symlink(target, "/newroot/dev/"+link))
	}
	mkdir("/newroot/dev/shm")
	mkdir("/newroot/dev/pts")
	mount("devpts", "/newroot/dev/pts", "devpts", nosuid|noexec, "newinstance,ptmxmode=0666,mode=620")
	do("symlink", syscall.Symlink("pts/ptmx", "/newroot/dev/ptmx"))
	for _, d := range []string{"/newroot/tmp", "/newroot/workspace"} {
		mkdir(d)
		mount("tmpfs", d, "tmpfs", nosuid|nodev, "mode=0755")
	}
	mount("oldroot", "oldroot", "", rec|syscall.MS_PRIVATE, "")
	do("umount oldroot", syscall.Unmount("oldroot", syscall.MNT_DETACH))
	do("chdir", syscall.Chdir("/newroot"))
	do("pivot_root", syscall.PivotRoot(".", "."))
	do("umount", syscall.Unmount(".", syscall.MNT_DETACH))
	do("chdir", syscall.Chdir("/workspace"))
	return err
}
