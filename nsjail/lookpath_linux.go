//go:build linux

package nsjail

import (
	"cmp"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// The init's search for the program's binary (runInit step 8), kept
// apart from the privileged sequence in init_linux.go because it needs
// and holds no privilege: it runs after the init confined itself (step
// 5: no capabilities, no_new_privs) and only picks the path the init
// execs inside the jail, one the program could exec itself.

// lookPath finds file in the PATH of env, inside the new root.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		return file, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		p := cmp.Or(dir, ".") + "/" + file // "" is the working directory
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", file, unix.ENOENT)
}

func executable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Mode&0o111 == 0 {
		return unix.EACCES
	}
	return nil
}
