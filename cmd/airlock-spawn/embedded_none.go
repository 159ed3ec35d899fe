//go:build !(cgo && linux && (amd64 || arm64))

package spawn

// Embedded says that this binary holds the reaper: not without cgo, nor
// on an architecture spawn.c does not know.
const Embedded = false
