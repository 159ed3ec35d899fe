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
	// Nothing of the host's /etc but the loader's, alternatives, the
	// service and protocol tables and locale aliases; no resolver, no CA
	// certificates without a network.
	for tgt, op := range byTarget {
		if strings.HasPrefix(tgt, "/etc/") && op.Kind == KindBind && !slices.Contains(etcBinds, tgt) {
			t.Errorf("host /etc entry bound: %s", tgt)
		}
	}
	for _, e := range []string{"/etc/services", "/etc/protocols", "/etc/ld.so.cache"} {
		if op := byTarget[e]; op.Kind != KindBind || !op.ReadOnly {
			t.Errorf("%s: %+v", e, op)
		}
	}
	if _, ok := byTarget["/etc/resolv.conf"]; ok {
		t.Error("resolv.conf without a network")
	}
	if _, ok := byTarget[caCerts]; ok {
		t.Error("CA certificates without a network")
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
		// Mount attributes weaker than the kind's (Op.ReadOnly).
		{Kind: KindTmpfs, Target: "/x", KeepDevices: true},
		{Kind: KindBind, Source: "/x", Target: "/x", KeepDevices: true},
		{Kind: KindBind, Source: "/dev/null", Target: "/dev/null", CharDevice: true, KeepDevices: true},
		{Kind: KindProc, Target: "/proc"},
		{Kind: KindProc, Target: "/proc", NoExec: true, KeepDevices: true},
		{Kind: KindDevpts, Target: "/dev/pts", KeepDevices: true},
		{Kind: KindCover, Target: "/proc/sys", NoExec: true},
		{Kind: KindCover, Target: "/proc/sys", ReadOnly: true},
		{Kind: KindMask, Target: "/proc/kcore", NoExec: true},
		{Kind: KindMask, Target: "/proc/kcore", ReadOnly: true},
		{Kind: KindMask, Target: "/proc/kcore", ReadOnly: true, NoExec: true, KeepDevices: true},
		{Kind: KindMask, Target: "/proc/kcore", ReadOnly: true, NoExec: true, Optional: true},
		{Kind: KindTmpfs, Target: "/x", Optional: true},
	} {
		if err := (Plan{Ops: []Op{op}}).Validate(); err == nil {
			t.Errorf("accepted %+v", op)
		}
	}
}

// On the host's network the sandbox resolves names as the host does (its
// hosts and resolv.conf, copied) and trusts its CA certificates; CACerts
// alone adds only the certificates.
func TestNetworkEtc(t *testing.T) {
	byTarget := func(o Options) map[string]Op {
		p, err := Default(o)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]Op{}
		for _, op := range p.Ops {
			m[op.Target] = op
		}
		return m
	}
	host := byTarget(Options{HostNetwork: true})
	if want, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		if op := host["/etc/resolv.conf"]; op.Kind != KindFile || op.Data != string(want) {
			t.Errorf("resolv.conf: %+v", op)
		}
	}
	if want, _ := os.ReadFile("/etc/hosts"); host["/etc/hosts"].Data != string(want) {
		t.Errorf("hosts: %q", host["/etc/hosts"].Data)
	}
	if op := host[caCerts]; op.Kind != KindBind || !op.ReadOnly || op.Source != caCerts {
		t.Errorf("CA certificates on the host network: %+v", op)
	}
	proxied := byTarget(Options{CACerts: true})
	if _, ok := proxied["/etc/resolv.conf"]; ok || proxied[caCerts].Kind != KindBind {
		t.Errorf("CACerts: resolv.conf %v, certs %+v", ok, proxied[caCerts])
	}
	if strings.Contains(proxied["/etc/hosts"].Data, "\n") && !strings.HasPrefix(proxied["/etc/hosts"].Data, "127.0.0.1\tlocalhost airlock") {
		t.Errorf("synthetic hosts: %q", proxied["/etc/hosts"].Data)
	}
}
