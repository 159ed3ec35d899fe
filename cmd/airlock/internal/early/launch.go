package early

import (
	"os"
	"time"

	"github.com/airlock-sandbox/airlock/internal/prefault"
)

// Launch is what this package started: a spawn helper and the init it
// clones, waiting for its spec. The fields are nsjail.Started's.
type Launch struct {
	Pid                    int
	SpecW, StatusR, Report *os.File
	Stdin, Stdout, Stderr  *os.File
	SpawnPath, InitPath    string
	UID, GID               int
	HostUID, HostGID       int
	// Token is the build token the init was started with.
	Token string
	At    time.Time
}

var launched = start(os.Args)

// The CLI's heap window is populated once the init is launched (a
// package's variables are initialized before its init functions run):
// the helper's clone and the init's start, the longer of a run's two
// paths, then go on on the other core meanwhile, where before they
// started after it (0.25 ms).
func init() { prefault.PopulateHeap(prefault.CLIHeapWindow) }

// Take returns the launch this process started, once (nil if it
// started none). The caller owns it from then on: it adopts it
// (executor.Adopt) or kills it (nsjail.Abandon).
func Take() *Launch {
	l := launched
	launched = nil
	return l
}
