// Command skeleton is BenchmarkColdStart's "Go skeleton" row: the least
// a cold start shaped like airlock's costs, with none of the sandbox. A
// static Go process (the CLI's stand-in) starts itself again in new user,
// pid, net, mount, ipc, uts and cgroup namespaces (the init's stand-in,
// its parent's uid mapped to 0), which execs the program; the first waits
// for it and exits with its status. No mounts, filter, cgroup, Landlock,
// reaper, policy or result: what is left of a run once those are gone.
//
//	skeleton PROGRAM [ARGS...]
package main

import (
	"fmt"
	"os"
	"syscall"
)

const childArg0 = "skeleton-child"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: skeleton PROGRAM [ARGS...]")
		os.Exit(2)
	}
	if os.Args[0] == childArg0 {
		err := syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
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
