//go:build !(cgo && linux && (amd64 || arm64))

package nsjail

// embeddedReaper says that this binary holds the reaper: not without cgo
// (or on an architecture spawn.c does not know), where a sandbox has a
// reaper only with Spec.SpawnPath (reaperPath).
const embeddedReaper = false
