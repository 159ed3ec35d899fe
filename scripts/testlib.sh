# Sourced by scripts/test and scripts/vmtest: build every package's tests
# once, run them in passes (root, rootless, in the cgroup v2 guest), count.

passed=0 failed=0 skipped=0 broken=0
pkgs=()

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
    -ldflags "-X github.com/airlock-sandbox/airlock/nsjail.buildToken=not-this-build" ./cmd/airlock-init
  chmod 755 "$1" "$1"/*.test "$1/bin" "$1"/bin/*
}

# run_pass NAME WORK RUNNER...: runs every test binary in WORK through
# RUNNER (may be empty), with a clean environment plus $pass_env, and adds
# up the results. The root pass runs in each package's directory, the
# others in WORK.
run_pass() {
  local name=$1 work=$2 line pkg dir bin log="$2/log.txt" rc p f s
  shift 2
  echo "== $name"
  for line in "${pkgs[@]}"; do
    pkg=${line%% *} dir=${line#* }
    bin="$work/$(echo "$pkg" | tr / _).test"
    local t0=$SECONDS
    [ "$name" = root ] || dir=$work
    local try
    for try in 1 2; do
      set +e
      (cd "$dir" && "$@" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work" TMPDIR=/tmp \
          AIRLOCK_TEST_REQUIRE_ALL=1 AIRLOCK_TEST_BINDIR="$work/bin" ${pass_env:-} "$bin" -test.v -test.count=1 -test.timeout="${test_timeout:-10m}") >"$log" 2>&1
      rc=$?
      set -e
      # An emulated guest may stall (rarely: seen once in ~60 guest runs).
      # A guest that timed out, or whose test binary hit its timeout, is
      # run again once, loudly, with the first attempt's tail kept in the
      # log; a test that fails is never retried.
      case $name in vm-*) ;; *) break ;; esac
      if [ $rc -eq 124 ] || grep -q '^panic: test timed out' "$log"; then
        [ $try -eq 1 ] && { echo "$name $pkg: the guest timed out; retrying once. Its last output:"; tail -40 "$log"; continue; }
      fi
      break
    done
    p=$(grep -cE '^\s*--- PASS' "$log" || true)
    f=$(grep -cE '^\s*--- FAIL' "$log" || true)
    s=$(grep -cE '^\s*--- SKIP' "$log" || true)
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    printf '%-12s %-52s %3d passed %3d failed %3d skipped %4ds\n' "$name" "$pkg" "$p" "$f" "$s" $((SECONDS - t0))
    if [ $rc -ne 0 ] || [ "$f" -gt 0 ]; then
      broken=1
      grep -vE '^\s*--- PASS|^=== (RUN|PAUSE|CONT)' "$log" | tail -60
    fi
  done
}

# vm_passes WORK: the suite in a cgroup-v2-only guest (scripts/vmrun.sh),
# as root and as an unprivileged user in a delegated cgroup.
vm_passes() {
  local root
  root=$(pwd)
  # The first run downloads the guest kernel package: it needs an apt index.
  [ -s "${VMRUN_ARTIFACTS:-${XDG_CACHE_HOME:-$HOME/.cache}/vmrun}/initrd.img" ] || apt-get update -qq
  # Inside the guest, Go's test timeout fires before the VM's, so a stall
  # leaves a goroutine dump.
  export VMRUN_TIMEOUT=480
  test_timeout=6m pass_env= run_pass vm-root "$1" "$root/scripts/vmrun.sh"
  test_timeout=6m pass_env=AIRLOCK_TEST_DELEGATED=1 run_pass vm-rootless "$1" "$root/scripts/vmrun.sh" "$root/scripts/vm-delegated"
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
