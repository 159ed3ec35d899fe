package executor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// The on-disk filter cache is reused across executors, and ignored when
// others could have written it.
func TestFilterCacheOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	e1, _ := New(Config{SeccompCacheDir: dir})
	f1, err := e1.filter(policy.Seccomp{Profile: "default"}, seccomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "seccomp-*"+cacheExt))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	// A store also prunes: another layout's file, and one older than
	// cacheMaxAge, go; a fresh one stays.
	old, stale, fresh := filepath.Join(dir, "seccomp-1.json"), filepath.Join(dir, "seccomp-2"+cacheExt), filepath.Join(dir, "seccomp-3"+cacheExt)
	for _, p := range []string{old, stale, fresh} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	os.Chtimes(stale, time.Time{}, time.Now().Add(-cacheMaxAge-time.Hour))
	pruneCache(dir, time.Now())
	if exists(old) || exists(stale) || !exists(fresh) || !exists(files[0]) {
		t.Fatalf("after pruning: json %v, stale %v, fresh %v, stored %v", exists(old), exists(stale), exists(fresh), exists(files[0]))
	}
	e2, _ := New(Config{SeccompCacheDir: dir})
	key, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, seccomp.Options{})
	f2, ok := e2.loadCached(key)
	if !ok || !reflect.DeepEqual(f2, f1) {
		t.Fatalf("cached filter not reused as it was stored: %v", ok)
	}
	// A group-writable file is not trusted.
	os.Chmod(files[0], 0o666)
	if _, ok := e2.loadCached(key); ok {
		t.Fatal("a world-writable cache file was trusted")
	}
	os.Chmod(files[0], 0o600)
	os.Chmod(dir, 0o777)
	if _, ok := e2.loadCached(key); ok {
		t.Fatal("a world-writable cache dir was trusted")
	}
	// A different policy gets a different key.
	k2, _ := e2.filterKey(policy.Seccomp{Profile: "default", Rules: []policy.SyscallRule{{Names: []string{"getpid"}, Action: policy.ActKill}}}, nil, seccomp.Options{})
	if k2 == key {
		t.Fatal("rules do not change the cache key")
	}
	// So do the inside ids a jail's filter confines id changes to, and
	// their absence (the process backend's filter).
	k3, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, seccomp.Options{IDs: &seccomp.IDs{UID: 1000, GID: 1000}})
	k4, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, seccomp.Options{IDs: &seccomp.IDs{UID: 0, GID: 1000}})
	if k3 == key || k4 == k3 {
		t.Fatal("the inside ids do not change the cache key")
	}
}

// The process backend's gated filter and the jail's never share a
// cache entry, in memory or on disk, whichever is compiled first: a
// policy's run on one backend after a run on the other loads its own
// filter, with the gate exactly where Check put it.
func TestFilterCacheByBackend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	s := policy.Seccomp{Profile: "default"}
	socket := uint32(unix.SYS_SOCKET)
	udp := []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}
	gated := func(f *seccomp.Filter) bool {
		ret, err := seccomp.Eval(f.Program, socket, udp...)
		if err != nil {
			t.Fatal(err)
		}
		return ret == 0x00050000|uint32(seccomp.SocketErrno)
	}
	for _, first := range []bool{false, true} {
		os.RemoveAll(dir)
		e1, _ := New(Config{SeccompCacheDir: dir})
		a, err := e1.filter(s, seccomp.Options{SocketGate: first})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e1.filter(s, seccomp.Options{SocketGate: !first})
		if err != nil {
			t.Fatal(err)
		}
		if gated(a) != first || gated(b) != !first {
			t.Fatalf("in memory, %v first: gated %v then %v", first, gated(a), gated(b))
		}
		// Another executor on the same disk cache.
		e2, _ := New(Config{SeccompCacheDir: dir})
		for _, gate := range []bool{first, !first} {
			f, _, _, err := e2.cachedFilter(s, seccomp.Options{SocketGate: gate})
			if err != nil || f == nil || gated(f) != gate {
				t.Fatalf("on disk, gate %v: %v %v", gate, f != nil, err)
			}
		}
	}
	// What Check decides picks the filter: the jail never gets the gate,
	// the process backend does, but on the host's network.
	e, _ := New(Config{})
	for _, c := range []struct {
		p    policy.Policy
		want bool
	}{
		{policy.Policy{}, false},
		{policy.Policy{Net: policy.NetNone}, false},
		// best_effort: on a host without Landlock's TCP rules too.
		{policy.Policy{Backend: "process", BestEffort: policy.DegradeLandlock | policy.DegradeNetwork}, true},
		{policy.Policy{Backend: "process", Net: policy.NetNone, BestEffort: policy.DegradeLandlock | policy.DegradeNetwork}, true},
		{policy.Policy{Backend: "process", Net: policy.NetHost}, false},
	} {
		// What these are not about, accepted degraded where the kernel
		// lacks Landlock's scopes (the cgroup v2 guest).
		c.p.BestEffort |= policy.DegradeLandlock
		enf, err := e.check(&c.p)
		if err != nil {
			t.Fatalf("%+v: %v", c.p, err)
		}
		if enf.Sockets != c.want {
			t.Errorf("%+v: sockets %v, want %v", c.p, enf.Sockets, c.want)
		}
	}
}

// The key's fast path for the default profile hashes the very bytes
// json.Marshal gives, so it never shares a key with another policy; and
// it covers all of policy.Seccomp: a new field must be added to it.
func TestSeccompDescFastPath(t *testing.T) {
	want, _ := json.Marshal(policy.Seccomp{Profile: "default"})
	got, _ := seccompDesc(policy.Seccomp{Profile: "default"})
	if string(got) != string(want) || string(got) != defaultDesc {
		t.Fatalf("fast path %s, json.Marshal %s", got, want)
	}
	if n := reflect.TypeFor[policy.Seccomp]().NumField(); n != 2 {
		t.Fatalf("policy.Seccomp has %d fields: seccompDesc's fast path knows Profile and Rules only", n)
	}
	for _, s := range []policy.Seccomp{{Profile: "default", Rules: []policy.SyscallRule{}}, {}, {Profile: "/p.json"}} {
		want, _ := json.Marshal(s)
		if got, _ := seccompDesc(s); string(got) != string(want) {
			t.Errorf("%+v: %s, json.Marshal %s", s, got, want)
		}
	}
}

// A cache file decodes to the filter stored; a cut, padded or foreign
// file is a miss, never a partial filter.
func TestCachedFilterForm(t *testing.T) {
	f := &seccomp.Filter{Profile: "default", Rules: 418, Notify: true,
		Program: seccomp.Program{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 255, K: 0xc000003e}, {Code: 6, K: 0x7fff0000}}}
	b := encodeCached(f)
	got, err := decodeCached(b)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Fatalf("%v: %+v", err, got)
	}
	for cut := 0; cut < len(b); cut++ {
		if _, err := decodeCached(b[:cut]); err == nil {
			t.Fatalf("cut at %d of %d: decoded", cut, len(b))
		}
	}
	for _, bad := range [][]byte{append(b, 0), append([]byte("airlock-seccomp\x02"), b[len(cacheMagic):]...), []byte(`{"profile":"default"}`)} {
		if _, err := decodeCached(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// An imported profile is read once, for both the cache key and the
// compilation: the filter cached under a key is the one compiled from
// the bytes that made the key. A FIFO gives its content to one reader
// only: a second read of it finds no writer and blocks, which fails here.
// (A FIFO is also what `--policy <(...)`-style callers pass.)
func TestImportedProfileReadOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "profile.json")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.WriteString(`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "write", "exit_group"], "action": "SCMP_ACT_ALLOW"}]}`)
			f.Close()
		}
	}()
	e, _ := New(Config{})
	defer e.Close()
	done := make(chan error, 1)
	go func() { _, err := e.filter(policy.Seccomp{Profile: fifo}, seccomp.Options{}); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the second open so the goroutine ends, then fail.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("the profile file was read twice (key, then compilation)")
	}
}
