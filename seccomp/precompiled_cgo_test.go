//go:build cgo && linux

package seccomp

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

// The programs compiled ahead (zdefault_<arch>.go) are what Compile gives
// now for the same options, with this libseccomp: a change to the
// compiler, the default profile, the ids or socket rules, or libseccomp
// that is not followed by `go generate ./seccomp` fails here, before a
// build could run a stale filter. scripts/test runs this on arm64 too,
// under qemu-user.
func TestPrecompiledIsCompiled(t *testing.T) {
	if api, _ := libseccomp.GetAPI(); api < 3 {
		// qemu-user: no seccomp for libseccomp to probe (mkdefault -api).
		if err := libseccomp.SetAPI(6); err != nil {
			t.Fatal(err)
		}
	}
	prof, err := DefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	if len(precompiled) != 2*len(Variants()) {
		t.Fatalf("%d programs compiled ahead for %s, want %d", len(precompiled), runtime.GOARCH, 2*len(Variants()))
	}
	def := policy.Seccomp{Profile: "default"}
	for _, notify := range []bool{false, true} {
		for _, o := range Variants() {
			o.Notify = notify
			want, err := Compile(prof, o)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := Precompiled(def, o)
			if !ok {
				t.Fatalf("%+v: none compiled ahead", o)
			}
			if !reflect.DeepEqual(got.Program, want) || got.Rules != prof.RuleCount() || got.Notify != notify || got.Profile != "default" {
				t.Fatalf("%+v: the program compiled ahead (%d instructions, %d rules) is not Compile's (%d, %d): run go generate ./seccomp",
					o, len(got.Program), got.Rules, len(want), prof.RuleCount())
			}
		}
	}
}
