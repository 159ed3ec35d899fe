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

// heapChunk is what one call populates where the window is not mapped
// whole: it then goes in chunks, and stops at the first that fails, where the heap's mapped part ends (the
// arena's rest is reserved, PROT_NONE, until the heap grows into it:
// EINVAL). The heap is mapped in 64 KiB multiples at least, so the
// first chunk, which holds the first object, is mapped.
const heapChunk = 64 << 10

// Heap is where this package's initialization populated the heap, how
// much of it, and how the last call ended (0 or -errno).
var Heap struct {
	Start, Populated uintptr
	Result           int64
}

// heapProbe is the first heap object, where the window starts (a package
// variable, so that it is in the heap).
var heapProbe *[16]byte

// The heap's window is populated when this package is initialized, which
// is among the first: it imports nothing, so it is ready at once, and
// its path sorts before most others'. The runtime has touched the heap's
// first pages by then, and its later pages are the process's.
func init() {
	heapProbe = new([16]byte)
	Heap.Start = uintptr(unsafe.Pointer(heapProbe)) &^ (heapChunk - 1)
	// One call where the window is mapped whole. Where it is not, the
	// kernel has populated the mapped part before failing, and the
	// chunks find where that ends, for the record (a chunk already
	// present costs a walk, not a fault).
	if Heap.Result = populateWrite(Heap.Start, HeapWindow); Heap.Result == 0 {
		Heap.Populated = HeapWindow
		return
	}
	for Heap.Populated < HeapWindow {
		if Heap.Result = populateWrite(Heap.Start+Heap.Populated, heapChunk); Heap.Result != 0 {
			break
		}
		Heap.Populated += heapChunk
	}
}

// populateWrite is madvise(addr, n, MADV_POPULATE_WRITE): 0 or -errno.
func populateWrite(addr, n uintptr) int64
