#!/usr/bin/env bash
# The whole test suite: set-up, then every test twice, once in an optimised
# build and once under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tests/setup.sh" build
"$here/tests/setup.sh" build-asan -DKL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for b in build build-asan; do
  echo "== $b"
  (cd "$here/$b" && ctest --output-on-failure -j2) || status=1
done
# A short fuzz run (about a minute in all, 20 s per target) after replaying
# every saved crash; tests/fuzz/run.sh <seconds> runs them for longer.
echo "== fuzz"
if command -v clang >/dev/null 2>&1 || \
   { [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; }; then
  "$here/tests/fuzz/run.sh" 20 build-fuzz || status=1
else
  echo "clang is not available and cannot be installed: fuzz run skipped"
fi
exit $status
