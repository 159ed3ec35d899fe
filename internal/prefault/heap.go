package prefault

import "unsafe"

// The heap windows, from the 64 KiB boundary below the first heap object
// of PopulateHeap: each binary's is about what it touches there, since a
// page populated and never touched costs its zeroing, and its freeing at
// the exit, for nothing. Counted with perf's page_fault_user events on
// `airlock run -- /bin/true` with no window (2026-11-28, the Intel
// guest): the CLI touched 187 heap pages within 1.24 MiB of the heap's
// start, airlock-init 99 within 0.6 MiB. Go's page allocator takes the
// lowest free pages, so what comes after the first object goes there.
const (
	// CLIHeapWindow is the CLI's (cmd/airlock/internal/early, once it
	// has launched the init): a window of 1 MiB took 102 of its faults,
	// one of 1.5 MiB 108, for half again the pages populated.
	CLIHeapWindow = 1 << 20
	// InitHeapWindow is airlock-init's (package initheap): 640 KiB took
	// as many of its faults (41 a run) as the 1.5 MiB it had before, and
	// 256 KiB fewer pages than that.
	InitHeapWindow = 640 << 10
)

// heapChunk is what one call populates where the window is not mapped
// whole: it then goes in chunks, and stops at the first that fails,
// where the heap's mapped part ends (the arena's rest is reserved,
// PROT_NONE, until the heap grows into it: EINVAL). The heap is mapped
// in 64 KiB multiples at least, so the first chunk, which holds the
// first object, is mapped.
const heapChunk = 64 << 10

// Heap is where PopulateHeap populated the heap: the window it was
// asked for, where it started, how much of it was populated, and how the
// last call ended (0 or -errno).
var Heap struct {
	Window, Start, Populated uintptr
	Result                   int64
}

// heapProbe is the first heap object, where the window starts (a package
// variable, so that it is in the heap).
var heapProbe *[16]byte

// PopulateHeap populates a window of the heap where the process's
// allocations will go, once (a later call does nothing). A binary calls
// it from the initialization of a package that imports nothing but this
// one, or little more (initheap; the CLI's cmd/airlock/internal/early,
// right after its launch): such a package is initialized among the
// first, since Go initializes the first ready package in import path
// order. The runtime has touched the heap's first pages by then, and its
// later pages are the process's.
func PopulateHeap(window uintptr) {
	if Heap.Window != 0 || window == 0 {
		return
	}
	Heap.Window = window
	heapProbe = new([16]byte)
	Heap.Start = uintptr(unsafe.Pointer(heapProbe)) &^ (heapChunk - 1)
	// One call where the window is mapped whole. Where it is not, the
	// kernel has populated the mapped part before failing, and the
	// chunks find where that ends, for the record (a chunk already
	// present costs a walk, not a fault).
	if Heap.Result = populateWrite(Heap.Start, window); Heap.Result == 0 {
		Heap.Populated = window
		return
	}
	for Heap.Populated < window {
		if Heap.Result = populateWrite(Heap.Start+Heap.Populated, heapChunk); Heap.Result != 0 {
			break
		}
		Heap.Populated += heapChunk
	}
}
