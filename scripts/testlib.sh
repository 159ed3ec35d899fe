# shellcheck shell=bash disable=SC2034  # the counters are read by the sourcing script
# Sourced by scripts/test and scripts/vmtest: build every package's tests
# once, run them in passes (root under -race, rootless, in the cgroup v2 guest),
# count.

passed=0 failed=0 skipped=0 broken=0
pkgs=()

# host_only PKG: true for the packages that do not run in the cgroup v2
# guest. internal/compat runs CPython's own test modules bare and inside
# (about 2 minutes a pass on the host): nothing in it depends on the
# cgroup version, and under the guest's software emulation it would cost
# far more than it proves there.
# server (airlock serve's HTTP layer: about 200 sandboxes a pass) and
# server/mcp (airlock mcp's, over the same server) and server/e2b (E2B's
# protocol, tested over a fake) likewise: the
# cgroup-version-dependent parts under them are the executor's, which
# runs there.
host_only() { [[ $1 == */internal/compat || $1 == */server || $1 == */server/mcp || $1 == */server/e2b ]]; }

# build_tests DIR: compile each package's tests into DIR/<pkg>.test.
build_tests() {
  mapfile -t pkgs < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...)
  local line pkg
  for line in "${pkgs[@]}"; do
    pkg=${line%% *}
    go test -c -o "$1/$(echo "$pkg" | tr / _).test" "$pkg"
  done
  # The separately built inits (cmd/airlock-init) the tests run sandboxes
  # with (AIRLOCK_TEST_BINDIR): the scripts/build pair, one without a
  # build token (a library's InitPath), one with a foreign token.
  mkdir -p "$1/bin"
  scripts/build "$1/bin/airlock"
  CGO_ENABLED=0 go build -o "$1/bin/airlock-init-plain" ./cmd/airlock-init
  CGO_ENABLED=0 go build -o "$1/bin/airlock-init-other" \
    -ldflags "-X github.com/airlock-sandbox/airlock/internal/jailinit.buildToken=not-this-build" ./cmd/airlock-init
  # A library user without helpers (executor's TestLibraryUser): as is,
  # without its nsjail.Init() call, and built without cgo.
  go build -o "$1/bin/airlock-libuser" ./internal/testutil/libuser
  go build -o "$1/bin/airlock-libuser-noinit" -ldflags "-X main.skipInit=1" ./internal/testutil/libuser
  CGO_ENABLED=0 go build -o "$1/bin/airlock-libuser-nocgo" ./internal/testutil/libuser
  chmod 755 "$1" "$1"/*.test "$1/bin" "$1"/bin/*
}

# build_race_tests DIR: each package's tests again with -race, into
# DIR/race/<pkg>.test (for the root pass: test_dir=DIR/race).
build_race_tests() {
  local line pkg
  mkdir -p "$1/race"
  for line in "${pkgs[@]}"; do
    pkg=${line%% *}
    go test -race -c -o "$1/race/$(echo "$pkg" | tr / _).test" "$pkg"
  done
  chmod 755 "$1/race" "$1"/race/*.test
}

# The clean environment every test binary runs with (after env -i);
# $pass_env may add several NAME=VALUE words.
test_env() {
  # shellcheck disable=SC2086
  echo PATH=/usr/local/bin:/usr/bin:/bin HOME="$1" TMPDIR=/tmp \
    AIRLOCK_TEST_REQUIRE_ALL=1 AIRLOCK_TEST_BINDIR="$1/bin" ${pass_env:-}
}

# count_pkg NAME PKG LOG RC SECS: adds one binary's results to the totals
# and prints its line (and, if it failed, the log without its passes).
count_pkg() {
  local name=$1 pkg=$2 log=$3 rc=$4 secs=$5 p f s
  p=$(grep -cE '^\s*--- PASS' "$log" || true)
  f=$(grep -cE '^\s*--- FAIL' "$log" || true)
  s=$(grep -cE '^\s*--- SKIP' "$log" || true)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  printf '%-12s %-52s %3d passed %3d failed %3d skipped %4ds\n' "$name" "$pkg" "$p" "$f" "$s" "$secs"
  if [ "$rc" -ne 0 ] || [ "$f" -gt 0 ]; then
    broken=1
    # Each failed test's own lines (under -v a test's log lines follow
    # its "=== RUN/CONT/NAME" line, not its "--- FAIL" one), so that the
    # notes of passes and skips cannot push a failure's message out of
    # sight; then the log's last lines (a panic, a timeout).
    awk '/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
      /^[[:space:]]*--- (PASS|SKIP)/ { next }
      /^[[:space:]]*--- FAIL: / { print; printf "%s", out[$3]; next }
      { out[cur] = out[cur] $0 "\n" }' "$log" | head -150
    echo "(last lines of the log:)"
    grep -vE '^\s*--- (PASS|SKIP)|^=== (RUN|PAUSE|CONT|NAME)' "$log" | tail -15
  fi
}

# run_pass NAME WORK RUNNER...: runs every test binary (in $test_dir,
# default WORK) through RUNNER (may be empty), with a clean environment
# (test_env, plus $pass_env), and adds up the results. The root
# pass runs each binary in its package's directory (as go test does),
# the others in WORK.
run_pass() {
  local name=$1 work=$2 line pkg dir bin log="$2/log.txt" rc t0 env
  shift 2
  read -ra env < <(test_env "$work")
  for line in "${pkgs[@]}"; do
    pkg=${line%% *} dir=${line#* }
    bin="${test_dir:-$work}/$(echo "$pkg" | tr / _).test"
    t0=$SECONDS
    case $name in root) ;; *) dir=$work ;; esac
    set +e
    (cd "$dir" && "$@" env -i "${env[@]}" "$bin" -test.v -test.count=1 -test.timeout="${test_timeout:-10m}") >"$log" 2>&1
    rc=$?
    set -e
    count_pkg "$name" "$pkg" "$log" $rc $((SECONDS - t0))
  done
}

# vm_boot NAME WORK [IN-GUEST RUNNER...]: every test binary in ONE boot of
# the cgroup v2 guest (scripts/vmrun.sh), in WORK (the guest's read-write
# share of it), through scripts/vm-suite, which writes each binary's log,
# exit status and seconds to WORK/vm-NAME/. An emulated guest may stall
# (rarely: twice in about 70 guest boots): if the guest timed out or died,
# or a binary hit its test timeout, the binaries that stalled or never
# finished run once more in a second boot, loudly, with the first
# attempt's tail printed; a binary that finished and failed is never
# rerun. It counts nothing (it may run in a subshell): vm_count does.
vm_boot() {
  local name=$1 work=$2 b out="$2/vm-$1" rc try t0=$SECONDS env here=$PWD line
  shift 2
  read -ra env < <(test_env "$work")
  local todo=()
  for line in "${pkgs[@]}"; do host_only "${line%% *}" || todo+=("$(echo "${line%% *}" | tr / _)"); done
  echo "== $name (one guest boot for ${#todo[@]} test binaries)"
  rm -rf "$out"
  for try in 1 2; do
    mkdir -p "$out/$try"
    # The guest's own lines (one per binary as it ends, vmrun's errors)
    # show indented, and stay in guest.log, as do vm-suite's heartbeats,
    # which do not show.
    set +e
    (cd "$work" && "$here/scripts/vmrun.sh" "$here/scripts/vm-suite" "$out/$try" "${todo[*]}" \
        -test.v -test.count=1 -test.timeout="$test_timeout" -test.skip="$guest_skip" -- "$@" env -i "${env[@]}") 2>&1 |
      tee "$out/$try/guest.log" | sed -u '/^vm-suite: alive: /d; s/^/  /'
    rc=${PIPESTATUS[0]}
    set -e
    # Which binaries stalled (test timeout) or never finished (no rc)?
    local again=()
    for b in "${todo[@]}"; do
      if [ ! -s "$out/$try/$b.rc" ] || grep -q '^panic: test timed out' "$out/$try/$b.log" 2>/dev/null; then again+=("$b"); fi
    done
    [ ${#again[@]} -gt 0 ] || break
    if [ $try = 1 ]; then
      echo "$name: the guest stalled or died (vmrun exit $rc; not finished or timed out: ${again[*]}); running those once more in a new guest. The first attempt's last output:"
      tail -20 "$out/$try/guest.log"
      for b in "${again[@]}"; do [ ! -s "$out/$try/$b.log" ] || { echo "-- $b:"; tail -40 "$out/$try/$b.log"; }; done
      todo=("${again[@]}")
    else
      echo "$name: the guest stalled or died again (vmrun exit $rc): ${again[*]}"
      tail -20 "$out/$try/guest.log"
    fi
  done
  echo "$name: $((SECONDS - t0)) s wall for the pass, boot(s) included"
}

# vm_count NAME WORK: counts what vm_boot NAME left in WORK/vm-NAME, per
# package as run_pass does, each binary from the last attempt that ran it.
vm_count() {
  local name=$1 out="$2/vm-$1" line pkg b try rc
  for line in "${pkgs[@]}"; do
    pkg=${line%% *} b=$(echo "$pkg" | tr / _)
    host_only "$pkg" && continue
    try=1; [ -e "$out/2/$b.start" ] && try=2
    [ -e "$out/$try/$b.log" ] || echo "$name $pkg: never started in the guest" >"$out/$try/$b.log"
    rc=$(cat "$out/$try/$b.rc" 2>/dev/null || echo 125)
    count_pkg "$name" "$pkg" "$out/$try/$b.log" "$rc" "$(cat "$out/$try/$b.secs" 2>/dev/null || echo 0)"
  done
}

# What the guest passes leave to the host passes in the CI tier: tests
# that cannot observe the cgroup version or the guest's older kernel.
# TestCompletion (cmd/airlock) drives bash and zsh over the CLI's flag
# sets, no sandbox (about 35 s a pass under emulation). AIRLOCK_TEST_GUEST=1
# (set for the guest) likewise leaves the fault harness's cases without a
# cgroup, and escape probe F08's walk of /usr, to the host passes
# (testutil.GuestTrim). scripts/test --long (long=1) runs all of it in the
# guest too (AIRLOCK_TEST_GUEST=full): the same tests as the host passes.
# (The CLI's sandbox commands drive airlock serve, whose layer is the same
# Go code on both kernels and host-only above; the live sandboxes under
# it run in the guest's executor and nsjail passes.) So do serve's
# refusals at start, its loopback guard, its tenants (token file, unix
# peer) and its /healthz while draining: HTTP and auth, nothing of the
# cgroup or the kernel (serve's drains and kills, which check that no
# cgroup is left, run in the guest), and airlock mcp over stdio (its
# layer, server/mcp, is host-only too). And the CLI's own mechanics,
# the same code over the same system calls on either kernel: its start
# environment and timer slack, the program's CPU affinity, signal
# defaults of a served program and a cancelled run's, exec's languages,
# the slim CLI's daemon, the init binary beside it, policy files, the
# uid and gid flags, a shortage of fds; and the executor's pip and node
# through the egress proxy (its other egress tests run) and its signal
# dispositions. (The guest still runs every test of the CLI's limits,
# cgroups, doctor, faults, lone binary and refusals, the executor's
# others and the jail's whole suite.) The two guest passes, at once beside
# the host passes, took 1,217 and 1,250 s with all of these, 901 and 929
# s without (2026-12-02).
guest_skip='^(TestCompletion|TestSandboxCLI|TestSandboxServeSIGKILL|TestServeRefusesUnsafeStart|TestServeRefusesIdleFlags|TestServeTCPLoopbackGuard|TestServeTokenFileTenants|TestServeUnixPeerTenants|TestServeHealthzWhileDraining|TestMCPStdio|TestCLIStartEnvironment|TestCLITimerSlack|TestCLIAffinity|TestServedProgramSignalDefaults|TestInterruptIsCancelled|TestExecCommand|TestSlimCLIFiltersFromDaemon|TestSlimCLIExecsDaemon|TestSiblingInit|TestWorkspaceAndPolicyFile|TestPolicyFileYAMLAndPresetConflict|TestUIDFlags|TestFDShortageIsTransient|TestEgressPip|TestEgressNode|TestSignalDispositions)$' guest_env=AIRLOCK_TEST_GUEST=1
if [ "${long:-0}" = 1 ]; then guest_skip='^$' guest_env=AIRLOCK_TEST_GUEST=full; fi

# vm_boots WORK: the guest's two passes, one boot each, at once: as root,
# and as an unprivileged user in a delegated cgroup (scripts/vm-delegated,
# a fresh delegated cgroup for each pass). Counted by vm_counts. At once,
# not in turn: a guest runs one test binary at a time, whose tests mostly
# wait on one sandbox after another, so a guest keeps about one of the
# machine's two cores busy; in turn, the machine was 30% idle over a CI
# run (2026-12-02), most of it at the end, when the guest ran alone.
# Each pass's lines go to WORK/vm-NAME.out, printed in turn once both
# have ended.
vm_boots() {
  local root
  root=$(pwd)
  # The first run downloads the guest kernel package: it needs an apt index.
  [ -s "${VMRUN_ARTIFACTS:-${XDG_CACHE_HOME:-$HOME/.cache}/vmrun}/initrd.img" ] || apt-get update -qq
  # Inside the guest, each binary's Go test timeout fires long before the
  # VM's, so a stalled binary leaves a goroutine dump and the rest still
  # run; the VM's limit is for the pass as a whole.
  # 20 minutes a binary: cmd/airlock took about 4 in the guest, and more
  # than 10 once every CLI test's sandbox had a reaper (the test binary
  # as the CLI has the embedded one, a large binary to exec under
  # emulation; issue 42).
  export VMRUN_TIMEOUT=${AIRLOCK_VM_TIMEOUT:-3000}
  # The guest writes a line as each binary ends, and vm-suite's heartbeat
  # one a minute while a binary runs (up to 12 minutes of it), so a
  # healthy guest is never silent for minutes; one that is has stalled
  # (two boots did, in their first binary: 27 minutes without a line, and
  # on 2026-11-29 15 minutes until this timeout, then 900 s), and the
  # second boot can start then rather than at VMRUN_TIMEOUT.
  export VMRUN_IDLE_TIMEOUT=${AIRLOCK_VM_IDLE:-300}
  # The kernel and initramfs built before either boots, where missing
  # (vmrun.sh would build them under a lock anyway: this way neither
  # pass's time holds it).
  local art=${VMRUN_ARTIFACTS:-${XDG_CACHE_HOME:-$HOME/.cache}/vmrun}
  if [ ! -s "$art/vmlinuz" ] || [ ! -s "$art/initrd.img" ]; then
    "$root/scripts/vmrun.sh" --build 2>&1 || { echo "vm: building the guest's kernel and initramfs failed"; return 1; }
  fi
  (test_timeout=20m pass_env=$guest_env vm_boot vm-root "$1") >"$1/vm-root.out" 2>&1 &
  local r=$!
  (test_timeout=20m pass_env="$guest_env AIRLOCK_TEST_DELEGATED=1" vm_boot vm-rootless "$1" "$root/scripts/vm-delegated") >"$1/vm-rootless.out" 2>&1 &
  local u=$!
  wait $r $u || true
  cat "$1/vm-root.out" "$1/vm-rootless.out"
}

vm_counts() {
  vm_count vm-root "$1"
  vm_count vm-rootless "$1"
}

# soak_pass NAME WORK RUNS RUNNER...: the soak benchmark (BenchmarkSoak:
# RUNS mixed sandboxes two at a time, every result checked, then no leaked
# process, workspace, cgroup or fd) from the prebuilt executor test
# binary; prints its runs/s line and fails the suite if it failed.
soak_pass() {
  local name=$1 work=$2 runs=$3 log="$2/soak.txt" rc
  shift 3
  set +e
  (cd "$work" && "$@" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work" TMPDIR=/tmp \
      AIRLOCK_TEST_REQUIRE_ALL=1 "$work/github.com_airlock-sandbox_airlock_executor.test" \
      -test.run '^$' -test.bench '^BenchmarkSoak$' -test.benchtime "${runs}x" -test.timeout 20m) >"$log" 2>&1
  rc=$?
  set -e
  if [ $rc -ne 0 ] || grep -q -- '--- FAIL' "$log"; then
    echo "soak $name: FAILED"
    tail -40 "$log"
    broken=1 failed=$((failed + 1))
    return
  fi
  passed=$((passed + 1))
  echo "soak $name: $(grep -E '^\s+soak_test.go:[0-9]+: [0-9]+ runs in' "$log" | tail -1 | sed -E 's/^\s+soak_test.go:[0-9]+: //')"
}
