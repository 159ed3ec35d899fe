// Package entryvec is the start vector the airlock CLI's ELF entry
// (_rt0_airlock, cmd/airlock/entry_*.s) gives Go's runtime: the one the
// kernel made, or a copy of it with GOMAXPROCS=1 appended to the
// environment.
//
// Why: the CLI runs with one P (cmd/airlock's process sets it for every
// command but serve), and setting it from main costs a stop of the world
// while the runtime's second P is being handed to a thread it started at
// its own start, a thread that on a two-core machine waits for the CPU
// the sandbox's init is starting on: 1.3 ms of the CLI's time and 0.7 ms
// of its CPU (medians, 2026-11-27, the AMD guest). A runtime whose
// environment says GOMAXPROCS=1 makes one P, and neither the thread nor
// the stop. The CLI takes the variable out of its environment again
// before anything reads it, so that what it starts (airlock-daemon, a
// program's --env-pass) sees its caller's environment.
//
// A caller's own GOMAXPROCS is left to the runtime, as is a start vector
// of more than maxVectorWords words (entryvec.h): its copy would need as
// much of the stack again.
//
// The routine, airlock_entryvec, has a register convention of its own:
// the entry calls it before the runtime exists. It takes the address of
// the kernel's vector (argc, argv, NULL, envp, NULL, the auxiliary
// vector up to AT_NULL) in DI on amd64 and R0 on arm64, and returns in
// AX or R0 that address, or that of the copy, 16-byte aligned, below
// address-64 (on amd64 the caller's return address is above it). It
// reads nothing of an environment string past its end. Vector calls it
// from Go, for the tests.
package entryvec

// envGOMAXPROCS is the environment string airlock_entryvec appends,
// NUL-terminated as the kernel's are.
//
//lint:ignore U1000 read by airlock_entryvec (entryvec_*.s) only
var envGOMAXPROCS = [...]byte{'G', 'O', 'M', 'A', 'X', 'P', 'R', 'O', 'C', 'S', '=', '1', 0}

// Vector is airlock_entryvec for the vector at sp.
func Vector(sp uintptr) uintptr
