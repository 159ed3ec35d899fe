//go:build !linux

package seccomp

// kernelAPI6: only Linux has seccomp.
func kernelAPI6() bool { return false }
