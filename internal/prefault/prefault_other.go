//go:build !linux || (!amd64 && !arm64)

package prefault

// Populate populates nothing where the entries have no routine.
func Populate() (readOnly, writable int64) { return 0, 0 }
