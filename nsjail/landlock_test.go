package nsjail_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/rootfs"
)

// Issue 21: Landlock is a second layer in the jail. A host directory
// bound in by a mistake of the plan (simulated: a bind added after the
// ruleset was computed from the plan) stays unreadable inside, while the
// plan's own paths work; without the ruleset the same bind is readable.
// Judged from the host: the canary's content in the program's output.
func TestLandlockSecondLayer(t *testing.T) {
	testutil.RequireUserNS(t)
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	abi := ex.Host().LandlockABI()
	testutil.RequireLandlock(t, abi, 1)
	dir := testutil.WorldReadableDir(t)
	secret := fmt.Sprintf("canary-%d", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(dir, "canary"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _, err := ex.Resolve(executor.Request{Args: []string{"/bin/sh", "-c", "cat /srv/canary; echo; cat /etc/hostname; echo w > /tmp/x && cat /tmp/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Landlock.ABI != abi || len(spec.Landlock.Paths) == 0 || spec.Landlock.Net {
		t.Fatalf("the jail's ruleset: %+v", spec.Landlock)
	}
	spec.Plan.Ops = append(spec.Plan.Ops, rootfs.Op{Kind: rootfs.KindBind, Source: dir, Target: "/srv", ReadOnly: true})
	res, err := nsjail.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, secret) || !strings.Contains(res.Stdout, "airlock\nw\n") || res.Enforced.Landlock != abi {
		t.Errorf("under the ruleset: stdout %q, stderr %q, landlock %d", res.Stdout, res.Stderr, res.Enforced.Landlock)
	}
	spec.Landlock = nsjail.Landlock{}
	res, err = nsjail.Run(t.Context(), spec)
	if err != nil || !strings.Contains(res.Stdout, secret) || res.Enforced.Landlock != 0 {
		t.Errorf("without the ruleset the bind must be readable (or this test proves nothing): %v, %q %q", err, res.Stdout, res.Stderr)
	}
}

// The ruleset's paths are the plan's, and nothing else: in the jail its
// targets (one rule for its /etc, the names of its root listable); on
// the host (the process backend) the binds' sources, the workspace
// writable, no /tmp, /dev/shm or passwd, /proc read-only.
func TestLandlockPaths(t *testing.T) {
	ws := t.TempDir()
	plan, err := rootfs.Default(rootfs.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	rw := nsjail.LandlockRead | nsjail.LandlockWrite
	for _, c := range []struct {
		onHost bool
		want   map[string]nsjail.LandlockAccess // path: access (0: absent)
	}{
		{false, map[string]nsjail.LandlockAccess{"/usr": nsjail.LandlockRead | nsjail.LandlockExec, "/workspace": rw | nsjail.LandlockExec,
			"/tmp": rw | nsjail.LandlockExec, "/etc": nsjail.LandlockRead, "/proc": rw, "/dev/null": rw, "/": nsjail.LandlockList,
			"/etc/passwd": 0, ws: 0}},
		{true, map[string]nsjail.LandlockAccess{"/usr": nsjail.LandlockRead | nsjail.LandlockExec, ws: rw | nsjail.LandlockExec,
			"/proc": nsjail.LandlockRead, "/dev/null": rw, "/etc/hosts": nsjail.LandlockRead,
			"/tmp": 0, "/dev/shm": 0, "/etc/passwd": 0, "/etc/group": 0, "/workspace": 0, "/": 0, "/etc": 0}},
	} {
		got := map[string]nsjail.LandlockAccess{}
		for _, p := range nsjail.LandlockPaths(plan, c.onHost) {
			if _, dup := got[p.Path]; dup {
				t.Errorf("onHost %v: %s twice", c.onHost, p.Path)
			}
			got[p.Path] = p.Access
		}
		for path, a := range c.want {
			if got[path] != a {
				t.Errorf("onHost %v: %s has access %b, want %b", c.onHost, path, got[path], a)
			}
		}
	}
}
