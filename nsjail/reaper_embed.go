package nsjail

import spawn "github.com/airlock-sandbox/airlock/cmd/airlock-spawn"

// embeddedReaper says that this binary holds the sandbox's reaper
// (cmd/airlock-spawn's, compiled in with cgo), which reaperPath then
// gives a sandbox started without a SpawnPath.
const embeddedReaper = spawn.Embedded
