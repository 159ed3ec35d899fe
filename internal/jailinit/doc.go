// Package jailinit is the sandbox init: the privileged sequence that runs
// in a sandbox's new namespaces, from its start by the parent (package
// nsjail) to the exec of the program or its reaper. It builds the jail
// (rootfs.Apply, hostname, loopback), confines itself (cgroup namespace,
// fds, capabilities, no_new_privs), applies Landlock and the seccomp
// filter, and execs. Every value it applies was decided by the parent and
// comes over the spec pipe (protocol.go, wire.go).
//
// It is a package of its own so that a binary that is only an init
// (cmd/airlock-init) links nothing else: its imports are the audit
// surface of the code that runs with the sandbox's capabilities, and no
// HTTP, YAML, libseccomp or cgroup library initializes on the critical
// path of every sandbox's start. nsjail.Init and nsjail.IsInit call
// into it for binaries that are their own init.
package jailinit
