package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-sandbox/airlock/nsjail"
)

// initSignals sends pid 1 each signal of its arguments, as a payload
// would, waits until pid 1 has taken them (its pending set, ShdPnd, empty
// again; then once more after a last one, so that pid 1 has done with
// the first), and exits 0 by itself. nsjail's reaper_test.go says more.
const initSignals = `pend() { sed -n 's/^ShdPnd:[[:space:]]*//p' /proc/1/status; }
taken() { i=0; while [ "$(pend)" != 0000000000000000 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; }
for s in "$@"; do kill -s "$s" 1 || exit 9; done; taken
kill -s WINCH 1; taken; echo alive`

// A lone CLI is a whole airlock (issue 42): the CLI with no helper beside
// it (loneEnv's, what go build and go install make; else this test
// binary, which has none either) keeps pid 1 semantics. airlock doctor
// says which helpers it has (none beside it, the embedded reaper in it)
// and that the default policy holds; a program's own signals end it as
// bare (self SIGTERM: signaled SIGTERM, exit 143, pid 1 the reaper); a
// payload's signals to pid 1 are dropped, as init drops them; and a
// SIGTERM the CLI gets still reaches the program.
func TestLoneBinary(t *testing.T) {
	e := newCLIEnv(t)
	e.env = append(e.env, noSpawnEnv+"=1") // this test binary as the CLI: no helper either
	t.Run("doctor", func(t *testing.T) {
		r := e.run(t, "", "doctor", "--json")
		var rep struct {
			OK      bool `json:"ok"`
			Helpers []struct {
				Name  string `json:"name"`
				Found bool   `json:"found"`
			} `json:"helpers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || !rep.OK {
			t.Fatalf("doctor --json: exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
		}
		found := map[string]bool{}
		for _, h := range rep.Helpers {
			found[h.Name] = h.Found
		}
		want := map[string]bool{"airlock-init": false, "airlock-spawn": false, "airlock-daemon": false, "embedded reaper": true}
		for name, f := range want {
			if v, ok := found[name]; !ok || v != f {
				t.Errorf("doctor: helper %s found %v (listed %v), want %v: %s", name, v, ok, f, r.stdout)
			}
		}
		r = e.run(t, "", "doctor")
		if r.code != 0 || !strings.Contains(r.stdout, "pid 1 reaper") || !strings.Contains(r.stdout, "found   embedded reaper") || !strings.Contains(r.stdout, "absent  airlock-spawn") {
			t.Errorf("doctor: exit %d: %s", r.code, r.stdout)
		}
	})
	t.Run("self signals", func(t *testing.T) {
		for _, c := range []struct {
			name, code string
		}{
			{"sigterm", "import os, signal; os.kill(os.getpid(), signal.SIGTERM); print('survived')"},
			{"sigkill", "import os, signal; os.kill(os.getpid(), signal.SIGKILL); print('survived')"},
			{"abort", "import os; os.abort()"},
			{"sigint", "import signal; signal.raise_signal(signal.SIGINT)"},
			{"exit", "print('bye'); raise SystemExit(3)"},
		} {
			bare := exec.Command("python3", "-c", c.code)
			out, _ := bare.Output()
			ws := bare.ProcessState.Sys().(syscall.WaitStatus)
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			r := e.run(t, "", "run", "--", "python3", "-c", c.code)
			if r.code != code || r.stdout != string(out) {
				t.Errorf("%s: exit %d, stdout %q; bare %d, %q", c.name, r.code, r.stdout, code, out)
			}
		}
		r := e.run(t, "", "run", "--json", "--", "sh", "-c", "kill -TERM $$")
		res, _ := oneResult(t, r)
		if r.code != 143 || res.Status != nsjail.StatusSignaled || res.Signal != "SIGTERM" || res.ExitCode != 143 || res.Enforced.Pid1 != "reaper" {
			t.Errorf("self SIGTERM: exit %d, %s %s %d, pid1 %q; want signaled SIGTERM 143, pid1 reaper", r.code, res.Status, res.Signal, res.ExitCode, res.Enforced.Pid1)
		}
	})
	t.Run("pid 1 as init", func(t *testing.T) {
		r := e.run(t, "", "run", "--json", "--", "sh", "-c", initSignals, "sh", "QUIT", "USR1", "TSTP")
		res, _ := oneResult(t, r)
		if r.code != 0 || res.Status != nsjail.StatusOK || res.Stdout != "alive\n" {
			t.Errorf("kill -QUIT/-USR1/-TSTP 1: exit %d, %s %q, stdout %q; want ok, exit 0, alive", r.code, res.Status, res.Signal, res.Stdout)
		}
	})
	t.Run("forwarded SIGTERM", func(t *testing.T) {
		// sleep has no handler: as the reaper's child it dies of the
		// SIGTERM airlock passes on (as pid 1 it would not see it).
		r, res := e.interrupt(t, syscall.SIGTERM, nil, "--kill-grace", "60s", "--", "sh", "-c", "echo partial; touch /out/started; exec sleep 60")
		if r.code != 143 || res.Status != nsjail.StatusCancelled || res.Signal != "SIGTERM" {
			t.Errorf("SIGTERM to airlock: exit %d, %s %s; want cancelled, the program killed by SIGTERM, 143", r.code, res.Status, res.Signal)
		}
	})
}
