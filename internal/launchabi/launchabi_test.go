package launchabi

import "testing"

// A caller that is not root maps its own ids, whatever it asked for;
// root maps the ids asked for, and nobody for 0: host root never.
func TestHostIDs(t *testing.T) {
	for _, c := range []struct{ callerUID, callerGID, hostUID, hostGID, uid, gid int }{
		{1000, 1001, 0, 0, 1000, 1001},
		{1000, 1001, 5000, 5001, 1000, 1001},
		{1000, 0, 0, 0, 1000, 0},
		{0, 0, 0, 0, Nobody, Nobody},
		{0, 0, 5000, 0, 5000, Nobody},
		{0, 7, 5000, 5001, 5000, 5001},
	} {
		if uid, gid := HostIDs(c.callerUID, c.callerGID, c.hostUID, c.hostGID); uid != c.uid || gid != c.gid {
			t.Errorf("HostIDs(%d, %d, %d, %d) = %d, %d, want %d, %d", c.callerUID, c.callerGID, c.hostUID, c.hostGID, uid, gid, c.uid, c.gid)
		}
	}
}
