package executor

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/seccomp"
	"golang.org/x/sys/unix"
)

// filterKey identifies the compiled filter of a policy's seccomp part
// without resolving it: the policy's own description, an imported
// profile's content, and everything the compilation depends on (arch,
// libseccomp, kernel release for the Docker profile's kernel-dependent
// rules, kill-by-notify, the process backend's socket gate, the jail's inside ids, and this
// binary): the jail's filter and the gated one never share a key.
// body is the imported profile's content (seccomp.ReadProfile), read once
// for both the key and the compilation.
func (e *Executor) filterKey(s policy.Seccomp, body []byte, opts seccomp.Options) (string, error) {
	h := sha256.New()
	desc, err := seccompDesc(s)
	if err != nil {
		return "", err
	}
	h.Write(desc)
	h.Write(body)
	var uts unix.Utsname
	unix.Uname(&uts)
	fmt.Fprintf(h, "\x00%s\x00%s\x00%v\x00%s\x00%s\x00socket gate %v", runtime.GOARCH, seccomp.LibraryVersion(), e.notify, unix.ByteSliceToString(uts.Release[:]), e.self, opts.SocketGate)
	if opts.IDs != nil {
		fmt.Fprintf(h, "\x00ids %d:%d", opts.IDs.UID, opts.IDs.GID)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// defaultDesc is json.Marshal of the default profile without rules, the
// usual policy: written out, because a process's first json.Marshal of a
// type builds its encoder by reflection (0.1 ms, in every `airlock run`).
// TestSeccompDescFastPath holds it to json.Marshal's bytes, and to
// policy.Seccomp's two fields.
const defaultDesc = `{"profile":"default"}`

// seccompDesc is the JSON description of s that filterKey hashes.
func seccompDesc(s policy.Seccomp) ([]byte, error) {
	if s.Profile == "default" && s.Rules == nil {
		return []byte(defaultDesc), nil
	}
	return json.Marshal(s)
}

// filterCacheID, set at link time, identifies the build of the code that
// compiles filters in place of this binary's file (selfID): scripts/build
// sets the same random value, new with every build, in airlock and
// airlock-daemon, so that the CLI, which has no libseccomp, finds the
// filters airlock-daemon compiled (the key's libseccomp version is the
// daemon's in both: seccomp.LibraryVersion). It must change whenever the
// code does: a value reused across builds would load filters an older
// airlock compiled.
//
//	-ldflags "-X github.com/airlock-sandbox/airlock/executor.filterCacheID=..."
var filterCacheID string

// selfID identifies the running binary cheaply (no hashing of its bytes):
// a rebuilt or replaced binary gets a new on-disk cache key; with a
// filterCacheID, the build does.
func selfID() string {
	if filterCacheID != "" {
		return "build " + filterCacheID
	}
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
	if e.cfg.SeccompCacheDir == "" {
		return nil, false
	}
	// The directory is opened without following a symlink and judged by
	// what was opened (fstat), and the file is opened in it: neither can
	// be swapped between the check and the read.
	dfd, err := unix.Open(e.cfg.SeccompCacheDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(dfd)
	if trustedFD(dfd, unix.S_IFDIR) != nil {
		return nil, false
	}
	name := "seccomp-" + key + cacheExt
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	path := filepath.Join(e.cfg.SeccompCacheDir, name)
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if trustedFD(fd, unix.S_IFREG) != nil {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCacheFile+1))
	if err != nil || len(b) > maxCacheFile {
		return nil, false
	}
	filt, err := decodeCached(b)
	if err != nil || filt.Notify != e.notify {
		return nil, false
	}
	return filt, true
}

// The cache file's form, in place of JSON, whose decoder a process builds
// by reflection on first use (0.1 ms of every `airlock run`): the magic
// (its last byte the layout's version), then the profile name (uvarint
// length and bytes), the rule count (uvarint), Notify (one byte, 0 or 1),
// the instruction count (uvarint) and that many raw sock_filter records
// (seccomp.Program.AppendRaw), nothing after: a cut file is a miss, never
// a shorter filter.
const (
	cacheMagic   = "airlock-seccomp\x01"
	cacheExt     = ".bpf"
	maxCacheFile = 1<<16 + 8*seccomp.MaxInstructions // name, counts, program
)

func encodeCached(f *seccomp.Filter) []byte {
	b := append([]byte(cacheMagic), binary.AppendUvarint(nil, uint64(len(f.Profile)))...)
	b = append(b, f.Profile...)
	b = binary.AppendUvarint(b, uint64(f.Rules))
	notify := byte(0)
	if f.Notify {
		notify = 1
	}
	b = binary.AppendUvarint(append(b, notify), uint64(len(f.Program)))
	return f.Program.AppendRaw(b)
}

var errBadCache = errors.New("not a cached filter")

// decodeCached reads encodeCached's form; anything else is errBadCache.
func decodeCached(b []byte) (*seccomp.Filter, error) {
	b, ok := bytes.CutPrefix(b, []byte(cacheMagic))
	if !ok {
		return nil, errBadCache
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, errBadCache
	}
	f := &seccomp.Filter{Profile: string(b[k : k+int(n)])}
	b = b[k+int(n):]
	rules, k := binary.Uvarint(b)
	if k <= 0 || rules > 1<<20 || len(b) < k+1 || b[k] > 1 {
		return nil, errBadCache
	}
	f.Rules, f.Notify = int(rules), b[k] == 1
	b = b[k+1:]
	count, k := binary.Uvarint(b)
	if k <= 0 || count == 0 || count > seccomp.MaxInstructions || uint64(len(b)-k) != 8*count {
		return nil, errBadCache
	}
	prog, err := seccomp.ParseRaw(b[k:])
	if err != nil {
		return nil, errBadCache
	}
	f.Program = prog
	return f, nil
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
	if _, err := tmp.Write(encodeCached(f)); err != nil || tmp.Close() != nil {
		return
	}
	if os.Rename(tmp.Name(), filepath.Join(dir, "seccomp-"+key+cacheExt)) == nil {
		pruneCache(dir, time.Now())
	}
}

// cacheMaxAge bounds the cache: every rebuilt binary and every policy
// adds a file, so a miss also removes the files written more than this
// long ago (a policy still in use is compiled again, once: 5 ms) and
// those of an older layout (JSON), which nothing reads any more.
const cacheMaxAge = 30 * 24 * time.Hour

func pruneCache(dir string, now time.Time) {
	files, _ := filepath.Glob(filepath.Join(dir, "seccomp-*"))
	for _, p := range files {
		fi, err := os.Lstat(p)
		if err == nil && (!strings.HasSuffix(p, cacheExt) || now.Sub(fi.ModTime()) > cacheMaxAge) {
			os.Remove(p)
		}
	}
}

// trusted requires path to be owned by this user and not writable by
// group or others, and, with dir, to be a directory (a symlink is not:
// it is never followed).
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

// trustedFD requires the open fd to be of type typ (S_IFDIR, S_IFREG),
// owned by this user and not writable by group or others.
func trustedFD(fd int, typ uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != typ || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return errUntrusted
	}
	return nil
}
