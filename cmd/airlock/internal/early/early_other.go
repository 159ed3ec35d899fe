//go:build !linux

package early

import (
	"os"
	"time"
)

// Launch is what this package started; on this OS, never anything.
type Launch struct {
	Pid                    int
	SpecW, StatusR, Report *os.File
	Stdin, Stdout, Stderr  *os.File
	SpawnPath, InitPath    string
	UID, GID               int
	HostUID, HostGID       int
	Token                  string
	At                     time.Time
}

// Take returns nil: nothing is launched ahead here.
func Take() *Launch { return nil }
