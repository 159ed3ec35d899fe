//go:build !(linux && (amd64 || arm64))

package prefault

// populateWrite populates nothing here: the routine is written for Linux
// on amd64 and arm64. PopulateHeap records ENOSYS.
func populateWrite(addr, n uintptr) int64 { return -38 }
