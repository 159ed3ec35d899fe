//go:build airlock_slim

package main

import "io"

// sandboxCmd: the slim CLI (scripts/build) links no HTTP client (it
// would add to every airlock run's start), so airlock sandbox runs in
// airlock-daemon, as serve and mcp do: the same process goes on as it.
func sandboxCmd(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return execDaemon("sandbox", args, stdout, stderr)
}
