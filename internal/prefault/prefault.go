// Package prefault maps a static Go binary's own image into its page
// tables at its ELF entry, before Go's runtime starts: one
// madvise(MADV_POPULATE_READ) over its text, read-only data and pclntab,
// and one madvise(MADV_POPULATE_WRITE) over its data and bss. The airlock
// CLI's entry calls the routine (cmd/airlock/entry_*.s): a short-lived
// process whose start is mostly the runtime's first touches of these
// pages, one page fault each (or one for a few pages of the file), and a
// fault is dear where the kernel runs as a guest with shadow page tables
// (12 µs on the AMD guest of 2026-11-27, against about 0.7 µs a page to
// populate). PopulateHeap, besides, populates a window of the heap where
// the process's allocations will go: the heap does not exist yet at the
// entry, and its pages were most of the CLI's faults left. Each binary
// calls it, with a window of its own, from the initialization of a
// package of its own (initheap; the CLI's early), among the first: a
// page populated and never touched costs its zeroing and freeing for
// nothing.
// airlock-init uses the package for that alone (its image populated at
// an entry of its own measured no gain: it touches less of an image a
// third the size). docs/performance.md as of commit bc3fb33 has the A/Bs.
//
// The bss without pointers (noptrbss) is left out: it holds buffers the
// programs never touch, such as crypto/internal/fips140/drbg's 32 MiB.
// Either call may fail (before Linux 5.14 both do, with EINVAL): the
// pages then fault in as before. It writes nothing and changes no
// mapping, only which pages are present.
//
// The routine, airlock_prefault, has a register convention of its own
// (the entries call it before the runtime exists): no arguments; it
// returns the two calls' results (0 or -errno) in AX and BX on amd64, R0
// and R1 on arm64, and clobbers the registers a system call does.
// Populate calls it from Go, for the tests.
package prefault
