// Package seccomp builds airlock's syscall filters in the supervisor and
// loads them in the sandbox init.
//
// # Profiles
//
// A Profile is a default action and rules (policy.SyscallRule). Resolve
// builds one from a policy: the default profile (DefaultProfile: Docker's
// default for a process with no capabilities, from
// github.com/moby/profiles, tightened: no io_uring, userfaultfd, bpf,
// perf_event_open, keyrings, namespace creation, mount family, ptrace,
// process_vm_*, kexec, modules, personality changes, TIOCSTI/TIOCLINUX,
// exotic socket families), "none", or an imported OCI/Docker JSON
// profile; then the policy's rules, which replace the profile's rules for
// the names they mention.
//
// # Compilation
//
// Compile runs in the parent. libseccomp (cgo, in compile_cgo.go only)
// builds the rules into a binary-tree filter for the native architecture
// with KILL_PROCESS as its bad-arch action. airlock's own short prefix
// runs before it: a non-native arch or an x32 number goes to that kill;
// numbers this build's syscall table does not know (gaps, and anything
// newer) return ENOSYS, so glibc's fallbacks work (clone3 is ENOSYS too);
// and conditional denials of a syscall some rule allows are checked there,
// first, because libseccomp silently drops them when an unconditional
// allow exists. Precedence is therefore simple: a denying rule beats an
// allowing one. Names are resolved from golang.org/x/sys's table (a
// generated copy, zsysnum.go), so syscalls newer than the linked
// libseccomp still work; a deny or kill rule naming a syscall this
// architecture lacks is an error, never dropped. Without cgo, Compile
// refuses (policy.ErrUnsupported).
//
// # The socket gate
//
// With Options.SocketGate (the process backend off the host's network,
// whose Landlock ruleset confines TCP's bind and connect only) the
// prefix refuses, before any rule, every socket() but TCP over IPv4 and
// IPv6 and every socketpair() but unix stream and seqpacket pairs
// (EACCES), listen() (EACCES: its own bind of an unbound socket is not
// Landlock's to check) and sends with MSG_FASTOPEN (EOPNOTSUPP: that
// connect is not either). See socketGate.
//
// # Loading and violations
//
// The init loads the raw program with Load, seccomp(2) with TSYNC, as its
// last step before execve: no cgo runs after clone. Kill rules compile to
// SECCOMP_RET_USER_NOTIF when kernel and libseccomp support it: the init
// hands the listener to the supervisor, which kills the whole sandbox on
// a notification and reports the syscall's name (ReceiveNotification,
// SyscallName). Otherwise they are KILL_PROCESS, reported without a name.
//
// # Limits
//
// Only amd64 and arm64 have syscall tables. Filters see syscall numbers
// and arguments, never the memory pointers point to: paths are confined
// by the mount namespace, not by seccomp. Any seccomp filter puts every
// syscall on the kernel's slower entry path (tens of nanoseconds); the
// kernel's constant-action cache makes the filter's own size irrelevant
// for syscalls whose verdict does not depend on their arguments.
package seccomp
