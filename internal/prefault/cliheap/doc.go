// Package cliheap populates the airlock CLI's heap window
// (prefault.CLIHeapWindow) as it is initialized, right after package
// prefault. The CLI imports it for that alone (cmd/airlock).
package cliheap
