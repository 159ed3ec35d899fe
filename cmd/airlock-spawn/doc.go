// Package spawn holds airlock-spawn, the spawn helper and sandbox reaper
// in C (spawn.c: its comments say what each does), which scripts/build
// compiles on its own as a static executable without libc. As a Go
// package it is that same reaper embedded: with cgo, spawn.c is compiled
// into every binary that links this package (nsjail does) with
// AIRLOCK_EMBEDDED, which leaves out the helper's own entry and main and
// adds a constructor. glibc runs the constructor, with argc, argv and
// envp, before Go's runtime starts (as runc's nsexec does); only in a
// process whose argv[0] is "airlock-reaper" (the sandbox init's exec of
// this binary: nsjail's reaperPath) does it run the reaper, which never
// returns. In every other process it returns at once, having done
// nothing else. So a binary with no airlock-spawn beside it (go build, go
// install, a library's program without a SpawnPath) still gives each
// sandbox a pid 1 that is not the program.
//
// Compiled here, in its own package's directory, so that Go's build
// cache sees every change to spawn.c (it does not follow an #include to
// another directory).
package spawn
