//go:build linux

package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestInDirNeverFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.Symlink(outside, filepath.Join(dir, "a", "link"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	mkdir := func(rel string) error { return inDir(root, rel, func(int) error { return nil }) }

	for _, rel := range []string{"a/link/x", "a/link", "file/x"} {
		if err := mkdir(rel); !errors.Is(err, ErrSymlink) {
			t.Errorf("inDir(%q) = %v; want ErrSymlink", rel, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a directory was created through the symlink: %v", ents)
	}
	if err := mkdir("a/../../escape"); !errors.Is(err, unix.EINVAL) {
		t.Errorf("'..' accepted: %v", err)
	}
	if err := mkdir("x/y/z"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "x/y/z")); err != nil || !fi.IsDir() {
		t.Fatalf("x/y/z not created: %v", err)
	}
	// The walk starts at root itself and never closes it; a path naming
	// root gets root itself, any other path a directory of its own.
	for _, rel := range []string{"", ".", "/", "x", "..", "a/link"} {
		inDir(root, rel, func(d int) error {
			if (d == root) != (rel == "" || rel == "." || rel == "/") {
				t.Errorf("inDir(%q) called f with %d, root %d", rel, d, root)
			}
			return nil
		})
		var st unix.Stat_t
		if err := unix.Fstat(root, &st); err != nil {
			t.Fatalf("root closed by inDir(%q): %v", rel, err)
		}
	}
	// A file target refuses a symlink in the last component too.
	err = attach(root, "a/link", -1, true)
	if !errors.Is(err, ErrSymlink) && !errors.Is(err, unix.ELOOP) {
		t.Errorf("attach over a symlink: %v", err)
	}
}
