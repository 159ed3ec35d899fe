package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// The program runs on its caller's CPUs, all of them or one, however the
// CLI starts it: the spawn helper pins the init's process to its own CPU
// for its first steps (cmd/airlock-spawn), and it must take the caller's
// affinity back before the init's exec, from which the program inherits.
func TestCLIAffinity(t *testing.T) {
	testutil.RequireUserNS(t)
	bin := filepath.Join(testutil.BinDir(t), "airlock")
	testutil.RequireFeature(t, "airlock built by scripts/build", testutil.Exists(bin))
	all := testutil.RequireCPUs(t, 2)
	last := -1
	for c := 0; c < len(all)*64; c++ {
		if all.IsSet(c) {
			last = c
		}
	}
	var one unix.CPUSet
	one.Set(last)
	read := "grep Cpus_allowed_list /proc/self/status"
	for name, args := range map[string][]string{
		"run":       {"run", "--", "/bin/sh", "-c", read},
		"json":      {"run", "--json", "--", "/bin/sh", "-c", read},
		"exec code": {"exec", "--lang", "sh", "-c", read},
	} {
		for setName, set := range map[string]*unix.CPUSet{"all": &all, "one": &one} {
			t.Run(name+"/"+setName, func(t *testing.T) {
				var code int
				var want, out, errs string
				onThread(t, func() error { return unix.SchedSetaffinity(0, set) }, func() {
					b, err := exec.Command("/bin/sh", "-c", read).Output()
					if err != nil {
						t.Error(err)
					}
					want = strings.TrimSpace(strings.TrimPrefix(string(b), "Cpus_allowed_list:"))
					code, out, errs = runCLI(t, exec.Command(bin, args...))
				})
				if code != 0 {
					t.Fatalf("exit %d: %s %s", code, out, errs)
				}
				line := "Cpus_allowed_list:\t" + want + "\n"
				ok := out == line
				if name == "json" {
					ok = strings.Contains(out, `"stdout": "Cpus_allowed_list:\t`+want+`\n"`)
				}
				if want == "" || !ok {
					t.Errorf("the program's CPUs: got %q, want %q (its caller's)", out, want)
				}
			})
		}
	}
}
