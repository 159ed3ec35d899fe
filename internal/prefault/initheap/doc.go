// Package initheap populates airlock-init's heap window
// (prefault.InitHeapWindow) as it is initialized, right after package
// prefault. The init imports it for that alone (cmd/airlock-init).
package initheap
