// Package initheap populates airlock-init's heap window
// (prefault.InitHeapWindow) as it is initialized, right after package
// prefault. The init imports it for that alone (cmd/airlock-init).
// Where prefault cannot populate (not Linux on amd64 or arm64), the
// call does nothing.
package initheap

import "github.com/airlock-sandbox/airlock/internal/prefault"

func init() { prefault.PopulateHeap(prefault.InitHeapWindow) }
