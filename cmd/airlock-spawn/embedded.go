//go:build cgo && linux && (amd64 || arm64)

package spawn

// Embedded says that this binary holds the reaper (see the package doc).
const Embedded = true
