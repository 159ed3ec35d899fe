package seccomp

import (
	"strconv"
	"strings"
)

// versionAtLeast reports whether the dotted version v is major.minor or
// newer ("" or malformed: false).
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return a > major || a == major && b >= minor
}
