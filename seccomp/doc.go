// Package seccomp carries airlock's seccomp filters from the parent, where
// they are built, to the sandbox init, where they are loaded.
//
// # Build and load are apart
//
// A Program is raw classic BPF. It is computed in the supervisor and
// travels to the init in the spec; the init loads it with Load, a raw
// seccomp(2) call with TSYNC, as its very last step before execve, after
// no_new_privs. No cgo and no libseccomp run in the init.
//
// # What it does not do yet
//
// The compiler from a policy's syscall rules to a Program (libseccomp, in
// the parent) and the default profile are not built yet: until they are,
// the default policy loads no filter and every result says
// "seccomp": "none". Library users may pass their own Program in
// nsjail.Spec.
package seccomp
