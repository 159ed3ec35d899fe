//go:build linux && (amd64 || arm64)

package cliheap

import "github.com/airlock-sandbox/airlock/internal/prefault"

func init() { prefault.PopulateHeap(prefault.CLIHeapWindow) }
