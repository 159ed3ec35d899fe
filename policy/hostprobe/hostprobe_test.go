//go:build linux

package hostprobe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/policy"
)

// Probe reports every check by its ID, as JSON that reads back the same,
// and changes nothing: this process's cgroup, its fds and the cgroup
// directories it could use are as they were, also when asked to judge a
// move into a supervisor leaf.
func TestProbeHasNoSideEffects(t *testing.T) {
	cgBefore, _ := os.ReadFile("/proc/self/cgroup")
	fds, _ := os.ReadDir("/proc/self/fd")
	parent, perr := cgroups.Inspect("", true)
	var dirBefore []os.DirEntry
	if perr == nil {
		dirBefore, _ = os.ReadDir(parent.Dir())
	}
	for _, opts := range []Options{{}, {CgroupMoveSelf: true}, {CgroupParent: "/airlock-no-such-parent"}} {
		h := Probe(opts)
		for _, id := range []policy.CheckID{policy.CheckKernel, policy.CheckUserNS, policy.CheckCgroup, policy.CheckSeccomp,
			policy.CheckSeccompNotify, policy.CheckPidfd, policy.CheckLandlock, policy.CheckLandlockNet, policy.CheckLandlockScope} {
			if c := h.Get(id); c.Name == "" || c.Detail == "not probed" || !c.OK && c.Fix == "" {
				t.Errorf("%+v: check %s: %+v", opts, id, c)
			}
		}
		if h.Has(policy.CheckCgroup) != (h.Limits != "") || opts.CgroupParent != "" && h.Has(policy.CheckCgroup) {
			t.Errorf("%+v: cgroup %+v, limits %q", opts, h.Get(policy.CheckCgroup), h.Limits)
		}
		b, err := json.Marshal(h)
		var back policy.Host
		if err != nil || json.Unmarshal(b, &back) != nil || !reflect.DeepEqual(&back, h) {
			t.Errorf("JSON round trip: %s", b)
		}
	}
	if h := Probe(Options{NoCgroup: true}); h.Has(policy.CheckCgroup) || h.Get(policy.CheckCgroup).Detail != "not probed" {
		t.Errorf("NoCgroup: %+v", h.Get(policy.CheckCgroup))
	}
	cgAfter, _ := os.ReadFile("/proc/self/cgroup")
	fdsAfter, _ := os.ReadDir("/proc/self/fd")
	if string(cgAfter) != string(cgBefore) || len(fdsAfter) != len(fds) {
		t.Errorf("cgroup %q -> %q, %d fds -> %d", cgBefore, cgAfter, len(fds), len(fdsAfter))
	}
	if perr == nil {
		dirAfter, _ := os.ReadDir(parent.Dir())
		if len(dirAfter) != len(dirBefore) {
			t.Errorf("%s changed: %d entries -> %d", parent.Dir(), len(dirBefore), len(dirAfter))
		}
		if _, err := os.Stat(filepath.Join(parent.Dir(), "airlock-supervisor")); err == nil && !reflect.DeepEqual(dirBefore, dirAfter) {
			t.Errorf("a supervisor leaf appeared")
		}
	}
}

// The Landlock checks follow the ABI: filesystem rules from 1, TCP from
// 4, scopes from 6; each missing one has its fix, and the Host's
// LandlockABI is the kernel's, capped at what airlock writes.
func TestLandlockChecks(t *testing.T) {
	for _, c := range []struct {
		abi            int
		fs, net, scope bool
	}{{0, false, false, false}, {1, true, false, false}, {3, true, false, false}, {4, true, true, false}, {6, true, true, true}, {9, true, true, true}} {
		h := &policy.Host{Landlock: c.abi, Checks: landlockChecks(c.abi)}
		got := []bool{h.Has(policy.CheckLandlock), h.Has(policy.CheckLandlockNet), h.Has(policy.CheckLandlockScope)}
		if got[0] != c.fs || got[1] != c.net || got[2] != c.scope {
			t.Errorf("ABI %d: fs, net, scope = %v", c.abi, got)
		}
		for _, cap := range h.Checks {
			if !cap.OK && cap.Fix == "" || cap.Detail == "" {
				t.Errorf("ABI %d: %+v", c.abi, cap)
			}
		}
		if want := min(c.abi, policy.LandlockMax); h.LandlockABI() != want {
			t.Errorf("ABI %d: LandlockABI %d, want %d", c.abi, h.LandlockABI(), want)
		}
	}
	if abi := landlockABI(); Probe(Options{NoCgroup: true}).Landlock != abi {
		t.Errorf("probe's ABI is not the kernel's %d", abi)
	}
}
