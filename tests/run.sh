#!/usr/bin/env bash
# The whole test suite: set-up, every test twice (an optimised build and one
# under AddressSanitizer + UndefinedBehaviorSanitizer), every build type with
# GCC and Clang, the Debian package, the module in Python and in Node, and a
# short fuzz run.  Warnings are errors in all of these builds (KL_WERROR).
# The last line says how many checks passed, failed and were skipped.  A
# check that cannot run here (a package registry it needs cannot be
# reached) exits 77 and is reported as skipped, loudly, never as passed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
set -e
"$here/tests/setup.sh" --suite build
"$here/tests/setup.sh" --suite build-asan -DKL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
set +e
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
passed=0 failed=0 skipped=0 skips=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Count a step's checks: its "ok   " and "FAIL " lines, or the step itself
# when it printed none; a step that fails without a FAIL line counts one.
step() {
  local title=$1
  shift
  echo "== $title"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local ok bad
  if [ "$rc" -eq 77 ]; then
    skipped=$((skipped + 1))
    skips="$skips
SKIPPED: $title: $(grep -m1 '^SKIP ' "$log" | cut -c6-)"
    return
  fi
  ok=$(grep -c -E '^ok   |, no finding$' "$log")
  bad=$(grep -c -E '^FAIL |: FINDING' "$log")
  if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
    if [ "$rc" -eq 0 ]; then ok=1; else bad=1; fi
  elif [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
    bad=1
  fi
  passed=$((passed + ok))
  failed=$((failed + bad))
}

# ctest: each test is one check.
tests() {
  local b=$1
  echo "== $b"
  (cd "$here/$b" && ctest --output-on-failure -j2) 2>&1 | tee "$log"
  local line total bad
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  total=$(echo "$line" | grep -oE 'out of [0-9]+' | grep -oE '[0-9]+')
  bad=$(echo "$line" | grep -oE '[0-9]+ tests? failed' | grep -oE '^[0-9]+')
  if [ -z "$total" ]; then failed=$((failed + 1)); return; fi
  passed=$((passed + total - bad))
  failed=$((failed + bad))
}

tests build
tests build-asan
step "build types (GCC and Clang)" "$here/tests/hosts/builds.sh" "$here/build-types"
step "Debian package" "$here/tests/hosts/package.sh" "$here/build-pkg"
# Debian's python3 (its sqlite3 module loads extensions).
if [ ! -x /usr/bin/python3 ]; then
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 >/dev/null
fi
python() {
  if [ ! -x /usr/bin/python3 ]; then
    echo "SKIP Debian's python3 is not installed and its package archive cannot be reached"
    return 77
  fi
  /usr/bin/python3 "$@"
}
step "Python host" python "$here/tests/hosts/test_python.py" "$here/build/kafkalog"
step "Node host" "$here/tests/hosts/node.sh" "$here/build/kafkalog.so" "$here/build-node"
step "npm package (npm install of the clone, better-sqlite3)" "$here/tests/hosts/npm_package.sh" "$here/build-node"
step "kafkalog command" "$here/tests/hosts/cli.sh" "$here/build/kafkalog.so"
step "Python package (pip install . in a venv and the system Python, pandas)" "$here/tests/hosts/python_package.sh"
step "README examples" python "$here/tests/hosts/readme.py" "$here/build/kafkalog"
step "SQL reference (docs/reference.yaml: what the module registers, every example, reference.md)" \
  python "$here/tests/hosts/reference.py" "$here/build/kafkalog"
# Each package installed from a clone into a fresh Debian 12 root (about
# 11 minutes the first time, most of it apt and three module builds):
# opt-in, KL_DEBOOTSTRAP=1.
if [ "${KL_DEBOOTSTRAP:-0}" = 1 ]; then
  step "fresh Debian 12 root (debootstrap): the .deb, pip install ., npm install" \
    "$here/tests/hosts/debootstrap.sh"
else
  echo "== fresh Debian 12 root (debootstrap): not run (KL_DEBOOTSTRAP=1 runs it)"
fi
# A short fuzz run (about a minute in all, 20 s per target) after replaying
# every saved crash; tests/fuzz/run.sh <seconds> runs them for longer.
if command -v clang >/dev/null 2>&1 || \
   { [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; }; then
  step "fuzz" "$here/tests/fuzz/run.sh" 20 build-fuzz
else
  skipped=$((skipped + 1))
  skips="$skips
SKIPPED: fuzz: clang is not available and cannot be installed"
fi
if [ "$skipped" -gt 0 ]; then
  echo "== $skipped check(s) did NOT run:$skips"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
