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
	f1, err := e1.filter(withRule, seccomp.Options{})
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
	key, _ := e2.filterKey(withRule, nil, seccomp.Options{})
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
	if k0, _ := e2.filterKey(policy.Seccomp{Profile: "default"}, nil, seccomp.Options{}); k0 == k2 || k0 == key {
		t.Fatal("rules do not change the cache key")
	}
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
	s := withRule
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

// withRule is a policy whose filter is compiled and cached: the default
// profile with a rule (the default profile alone is compiled ahead).
var withRule = policy.Seccomp{Profile: "default", Rules: []policy.SyscallRule{{Names: []string{"getppid"}, Action: policy.ActErrno, Errno: 1}}}

// The default policy's filter is compiled ahead (seccomp.Precompiled):
// an Executor without a cache directory (the CLI of a user without a
// home) compiles nothing for it, on either backend, with kill by
// notification or without, and reports it at hand (FilterCached), so
// that the CLI, which has no libseccomp, runs it itself. Any other
// policy is compiled.
func TestDefaultFilterCompiledAhead(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, notify := range []bool{false, true} {
		e.notify = notify
		for _, p := range []policy.Policy{{}, {Backend: "process", BestEffort: policy.DegradeLandlock | policy.DegradeNetwork}, {Backend: "process", Net: policy.NetHost, BestEffort: policy.DegradeLandlock}} {
			if !e.FilterCached(p) {
				t.Errorf("%+v: the default filter is not at hand without a cache", p)
			}
			enf, err := e.check(&p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := e.filter(p.Seccomp, filterFor(p, enf))
			if err != nil {
				t.Fatal(err)
			}
			pre, _ := seccomp.Precompiled(p.Seccomp, func() seccomp.Options { o := filterFor(p, enf); o.Notify = notify; return o }())
			if pre == nil || !reflect.DeepEqual(f, pre) || f.Notify != notify {
				t.Fatalf("%+v notify %v: not the program compiled ahead", p, notify)
			}
		}
	}
	if n := e.compiles.Load(); n != 0 {
		t.Fatalf("the default policy compiled %d filters", n)
	}
	if _, err := e.filter(withRule, seccomp.Options{}); err != nil {
		t.Fatal(err)
	}
	if n := e.compiles.Load(); n != 1 {
		t.Fatalf("a policy with a rule compiled %d filters, want 1", n)
	}
}

// A cache directory others could have written, or made by another user
// (the airlock-UID a no-home user keeps in a shared /tmp, made first by
// someone else), is refused: nothing is read from it or written to it;
// nor is one that is a symlink, even to this user's own private
// directory. Each run then compiles its filter.
func TestFilterCacheDirRefused(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	e0, _ := New(Config{SeccompCacheDir: good})
	if _, err := e0.filter(withRule, seccomp.Options{}); err != nil {
		t.Fatal(err)
	}
	stored, _ := filepath.Glob(filepath.Join(good, "seccomp-*"+cacheExt))
	if len(stored) != 1 || e0.compiles.Load() != 1 {
		t.Fatalf("the private dir: files %v after %d compiles", stored, e0.compiles.Load())
	}
	// A trusted dir's file is loaded, not compiled: what the cases below
	// are judged against.
	if e, _ := New(Config{SeccompCacheDir: good}); mustFilter(t, e) != 0 {
		t.Fatal("a filter in a private cache dir was compiled again")
	}
	base := t.TempDir()
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	os.Symlink(good, link)
	cases := map[string]string{"mode 0777": open, "a symlink to a private dir": link}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["owned by another user"] = other
	} else {
		cases["owned by another user"] = "/" // root's, this user is not root
	}
	for what, dir := range cases {
		if dir != link && dir != "/" {
			// The filter file planted in it, as another user would.
			b, _ := os.ReadFile(stored[0])
			os.WriteFile(filepath.Join(dir, filepath.Base(stored[0])), b, 0o600)
		}
		e, _ := New(Config{SeccompCacheDir: dir})
		if mustFilter(t, e) != 1 {
			t.Errorf("%s: the cache dir was trusted", what)
		}
	}
	// Nor is anything written to a dir others can write.
	os.Remove(filepath.Join(open, filepath.Base(stored[0])))
	if e, _ := New(Config{SeccompCacheDir: open}); mustFilter(t, e) != 1 {
		t.Error("mode 0777: the filter was not compiled")
	}
	if files, _ := filepath.Glob(filepath.Join(open, "*")); len(files) != 0 {
		t.Errorf("mode 0777: written to: %v", files)
	}
	// Nothing was written through the symlink.
	if files, _ := filepath.Glob(filepath.Join(good, "*")); len(files) != 1 {
		t.Errorf("written through a symlink: %v", files)
	}
}

// mustFilter compiles or loads withRule's filter in e and returns how
// many compilations that took.
func mustFilter(t *testing.T, e *Executor) int64 {
	t.Helper()
	defer e.Close()
	if _, err := e.filter(withRule, seccomp.Options{}); err != nil {
		t.Fatal(err)
	}
	return e.compiles.Load()
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
