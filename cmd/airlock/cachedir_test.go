package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The CLI's filter cache: the user's cache home where it has one; else a
// private runtime dir; else airlock-UID in the temp dir. A home that is
// not there, or not this user's, is never made or used.
func TestUserCacheDir(t *testing.T) {
	uid := os.Geteuid()
	home := t.TempDir()
	run := t.TempDir()
	os.Chmod(run, 0o700)
	open := t.TempDir()
	os.Chmod(open, 0o777)
	tmp := t.TempDir()
	private := filepath.Join(tmp, "airlock-"+strconv.Itoa(uid))
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": home}, filepath.Join(home, ".cache", "airlock")},
		{map[string]string{"HOME": home, "XDG_CACHE_HOME": filepath.Join(home, "c")}, filepath.Join(home, "c", "airlock")},
		{map[string]string{"HOME": "/nonexistent", "XDG_RUNTIME_DIR": run, "TMPDIR": tmp}, filepath.Join(run, "airlock")},
		{map[string]string{"HOME": "/nonexistent", "XDG_CACHE_HOME": "/nonexistent/.cache", "TMPDIR": tmp}, private},
		{map[string]string{"HOME": "/nonexistent", "XDG_RUNTIME_DIR": open, "TMPDIR": tmp}, private},
		{map[string]string{"HOME": "relative", "XDG_RUNTIME_DIR": "relative"}, "/tmp/airlock-" + strconv.Itoa(uid)},
		{map[string]string{}, "/tmp/airlock-" + strconv.Itoa(uid)},
	} {
		got := userCacheDir(func(k string) string { return c.env[k] }, uid)
		if got != c.want {
			t.Errorf("%v: %s, want %s", c.env, got, c.want)
		}
	}
	// Another user's home, or runtime dir, is not this user's cache.
	other := uid + 1
	if got := userCacheDir(func(k string) string {
		return map[string]string{"HOME": home, "XDG_RUNTIME_DIR": run, "TMPDIR": tmp}[k]
	}, other); got != filepath.Join(tmp, "airlock-"+strconv.Itoa(other)) {
		t.Errorf("uid %d, home and runtime dir of uid %d: %s", other, uid, got)
	}
	if _, err := os.Lstat(filepath.Join(home, ".cache")); err == nil {
		t.Error("a cache dir was made")
	}
}
