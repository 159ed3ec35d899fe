package rootfs

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDefaultPlanShape(t *testing.T) {
	p, err := Default(Options{TmpfsSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := Default(Options{TmpfsSize: 8 << 20})
	if !reflect.DeepEqual(p, q) {
		t.Fatal("the same options gave different plans")
	}
	byTarget := map[string]Op{}
	var order []string
	for _, op := range p.Ops {
		byTarget[op.Target] = op
		order = append(order, op.Target)
	}
	if op := byTarget["/usr"]; op.Kind != KindBind || !op.ReadOnly {
		t.Errorf("/usr: %+v", op)
	}
	if op := byTarget["/proc"]; op.Kind != KindProc {
		t.Errorf("/proc: %+v", op)
	}
	if op := byTarget["/proc/sys"]; op.Kind != KindCover {
		t.Errorf("/proc/sys not covered read-only: %+v", op)
	}
	for _, d := range []string{"/tmp", "/workspace", "/dev/shm"} {
		if op := byTarget[d]; op.Kind != KindTmpfs || !strings.Contains(op.Options, "size=8388608") || !strings.Contains(op.Options, "nr_inodes=") {
			t.Errorf("%s: want a bounded tmpfs, got %+v", d, op)
		}
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom"} {
		if op := byTarget["/dev/"+n]; op.Kind != KindBind || !op.CharDevice {
			t.Errorf("/dev/%s: %+v", n, op)
		}
	}
	// Nothing of the host's /etc but the loader cache and alternatives.
	for tgt, op := range byTarget {
		if strings.HasPrefix(tgt, "/etc/") && op.Kind == KindBind && tgt != "/etc/ld.so.cache" && tgt != "/etc/alternatives" {
			t.Errorf("host /etc entry bound: %s", tgt)
		}
	}
	// Merged /usr: the host's symlinked system dirs are recreated as links.
	if link, err := os.Readlink("/bin"); err == nil {
		if op := byTarget["/bin"]; op.Kind != KindSymlink || op.Source != link {
			t.Errorf("/bin: %+v, host link %q", op, link)
		}
	}
	// /dev/shm must come after the /dev tmpfs it lives in.
	if slices.Index(order, "/dev/shm") < slices.Index(order, "/dev") {
		t.Error("/dev/shm planned before /dev")
	}
}

func TestWorkspaceAndExtra(t *testing.T) {
	p, err := Default(Options{Workspace: "/srv/ws", Extra: []Op{{Kind: KindTmpfs, Target: "/workspace/cache"}}})
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.Ops)
	if ws := p.Ops[n-2]; ws.Kind != KindBind || ws.Source != "/srv/ws" || ws.Target != "/workspace" || ws.ReadOnly {
		t.Errorf("workspace op %+v", ws)
	}
	if p.Ops[n-1].Target != "/workspace/cache" {
		t.Errorf("extra ops must come last: %+v", p.Ops[n-1])
	}
}

func TestValidateRejects(t *testing.T) {
	for _, op := range []Op{
		{Kind: KindTmpfs, Target: "relative"},
		{Kind: KindTmpfs, Target: "/"},
		{Kind: KindTmpfs, Target: "/a/../b"},
		{Kind: KindBind, Source: "rel", Target: "/x"},
		{Kind: KindSymlink, Target: "/x"},
		{Kind: "overlay", Target: "/x"},
	} {
		if err := (Plan{Ops: []Op{op}}).Validate(); err == nil {
			t.Errorf("accepted %+v", op)
		}
	}
}
