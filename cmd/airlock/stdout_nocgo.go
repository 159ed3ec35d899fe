//go:build !cgo

package main

// stdoutClosedAtStart: without cgo there is no code that runs before the
// Go runtime, which opens /dev/null at a closed fd 1, so a closed stdout
// cannot be told from /dev/null (stdout_cgo.go).
func stdoutClosedAtStart() bool { return false }
