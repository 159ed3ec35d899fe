//go:build linux && (amd64 || arm64)

package prefault

// Populate is airlock_prefault: the results of populating the read-only
// part and the writable part of this binary's image (0 or -errno).
func Populate() (readOnly, writable int64)

// populateWrite is madvise(addr, n, MADV_POPULATE_WRITE): 0 or -errno.
func populateWrite(addr, n uintptr) int64
