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
	f1, err := e1.filter(policy.Seccomp{Profile: "default"}, nil)
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
	key, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, nil)
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
	k2, _ := e2.filterKey(policy.Seccomp{Profile: "default", Rules: []policy.SyscallRule{{Names: []string{"getpid"}, Action: policy.ActKill}}}, nil, nil)
	if k2 == key {
		t.Fatal("rules do not change the cache key")
	}
	// So do the inside ids a jail's filter confines id changes to, and
	// their absence (the process backend's filter).
	k3, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, &seccomp.IDs{UID: 1000, GID: 1000})
	k4, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, &seccomp.IDs{UID: 0, GID: 1000})
	if k3 == key || k4 == k3 {
		t.Fatal("the inside ids do not change the cache key")
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
	go func() { _, err := e.filter(policy.Seccomp{Profile: fifo}, nil); done <- err }()
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
