//go:build cgo

package main

import libseccomp "github.com/seccomp/libseccomp-golang"

// setAPI makes libseccomp assume API level n instead of probing the kernel.
func setAPI(n uint) error { return libseccomp.SetAPI(n) }
