//go:build linux && (amd64 || arm64)

package prefault

import "unsafe"

// Populate is airlock_prefault: the results of populating the read-only
// part and the writable part of this binary's image (0 or -errno).
func Populate() (readOnly, writable int64)

// HeapWindow is how much of the heap this package's initialization
// populates, from the 64 KiB boundary below its first heap object: the
// CLI touched about 0.8 MiB of heap in a window of 1.5 MiB there
// (2026-11-27, `airlock run -- /bin/true`), where Go's page allocator,
// which takes the lowest free pages, puts what comes after.
const HeapWindow = 1536 << 10

// Heap is where this package's initialization populated the heap, and
// its result (0 or -errno).
var Heap struct {
	Start  uintptr
	Result int64
}

// The heap's window is populated when this package is initialized, which
// is among the first: it imports nothing, so it is ready at once, and
// its path sorts before most others'. The runtime has touched the heap's
// first pages by then, and its later pages are the process's.
func init() {
	p := unsafe.Pointer(new([16]byte))
	Heap.Start = uintptr(p) &^ 0xffff
	Heap.Result = populateHeap(p, HeapWindow)
}

// populateHeap is madvise(p rounded down to 64 KiB, n,
// MADV_POPULATE_WRITE): 0 or -errno. (p escapes: it is in the heap.)
func populateHeap(p unsafe.Pointer, n uintptr) int64
