package executor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// The on-disk filter cache is reused across executors, and ignored when
// others could have written it.
func TestFilterCacheOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	e1, _ := New(Config{SeccompCacheDir: dir})
	f1, err := e1.filter(policy.Seccomp{Profile: "default"})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "seccomp-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	e2, _ := New(Config{SeccompCacheDir: dir})
	key, _ := e2.filterKey(policy.Seccomp{Profile: "default"})
	f2, ok := e2.loadCached(key)
	if !ok || f2.Profile != f1.Profile || len(f2.Program) != len(f1.Program) || f2.Program[7] != f1.Program[7] {
		t.Fatalf("cached filter not reused: %v", ok)
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
	k2, _ := e2.filterKey(policy.Seccomp{Profile: "default", Rules: []policy.SyscallRule{{Names: []string{"getpid"}, Action: policy.ActKill}}})
	if k2 == key {
		t.Fatal("rules do not change the cache key")
	}
}
