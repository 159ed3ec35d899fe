//go:build cgo && linux

package spawn

// spawn.c is compiled with these flags (cgo compiles every .c file of the
// package); on an architecture other than x86_64 and aarch64 it compiles
// to nothing (Embedded is false).

/*
#cgo CFLAGS: -DAIRLOCK_EMBEDDED -O2 -Wno-unused-function -Wno-unused-variable
*/
import "C"
