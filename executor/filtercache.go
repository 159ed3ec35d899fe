package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// filterKey identifies the compiled filter of a policy's seccomp part
// without resolving it: the policy's own description, an imported
// profile's content, and everything the compilation depends on (arch,
// libseccomp, kernel release for the Docker profile's kernel-dependent
// rules, kill-by-notify, and this binary).
func (e *Executor) filterKey(s policy.Seccomp) (string, error) {
	h := sha256.New()
	desc, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	h.Write(desc)
	if s.Profile != "" && s.Profile != "default" && s.Profile != "none" {
		body, err := os.ReadFile(s.Profile)
		if err != nil {
			return "", policy.Invalid("seccomp profile", "%v", err)
		}
		h.Write(body)
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	fmt.Fprintf(h, "\x00%s\x00%s\x00%v\x00%s\x00%s", runtime.GOARCH, seccomp.LibraryVersion(), e.notify, unix.ByteSliceToString(uts.Release[:]), e.self)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// selfID identifies the running binary cheaply (no hashing of its bytes):
// a rebuilt or replaced binary gets a new on-disk cache key.
func selfID() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return "unknown"
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return exe
	}
	return fmt.Sprintf("%s:%d:%d:%d:%d", exe, st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano())
}

// errUntrusted marks a cache directory or file others could have written.
var errUntrusted = errors.New("not owned by this user or writable by others")

// loadCached reads a compiled filter from the on-disk cache. Anything
// unexpected (missing, foreign owner, group/world-writable, malformed)
// is a miss: the filter is then compiled afresh.
func (e *Executor) loadCached(key string) (*seccomp.Filter, bool) {
	if e.cfg.SeccompCacheDir == "" || trusted(e.cfg.SeccompCacheDir, true) != nil {
		return nil, false
	}
	path := filepath.Join(e.cfg.SeccompCacheDir, "seccomp-"+key+".json")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if trustedFile(f) != nil {
		return nil, false
	}
	var filt seccomp.Filter
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&filt); err != nil || len(filt.Program) == 0 || len(filt.Program) > seccomp.MaxInstructions || filt.Notify != e.notify {
		return nil, false
	}
	return &filt, true
}

// storeCached writes a compiled filter to the on-disk cache, atomically;
// failures are ignored (the cache is an optimisation).
func (e *Executor) storeCached(key string, f *seccomp.Filter) {
	dir := e.cfg.SeccompCacheDir
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil || trusted(dir, true) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".seccomp-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	if err := json.NewEncoder(tmp).Encode(f); err != nil || tmp.Close() != nil {
		return
	}
	os.Rename(tmp.Name(), filepath.Join(dir, "seccomp-"+key+".json"))
}

// trusted requires path to be owned by this user and not writable by
// group or others.
func trusted(path string, dir bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	if dir && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return errUntrusted
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return errUntrusted
	}
	return nil
}

func trustedFile(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return errUntrusted
	}
	return nil
}
