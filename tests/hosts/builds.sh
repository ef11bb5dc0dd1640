#!/usr/bin/env bash
# Every CMake build type with GCC and with Clang, everything built (module,
# core, tests, benchmarks), warnings as errors: a new optimisation level's
# warning (-O3's format-truncation, say) is found here, not by a user.
#   tests/hosts/builds.sh [build-root]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:-$here/build-types}
command -v clang >/dev/null 2>&1 || {
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang >/dev/null
}
status=0
mkdir -p "$root"
for cc in gcc clang; do
  for type in Release Debug RelWithDebInfo MinSizeRel; do
    b="$root/$cc-$type"
    start=$(date +%s)
    case $cc in gcc) cxx=g++ ;; *) cxx=clang++ ;; esac
    if CC=$cc CXX=$cxx cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=$type -DKL_WERROR=ON >"$b.log" 2>&1 &&
       cmake --build "$b" -j"$(nproc)" >>"$b.log" 2>&1; then
      echo "ok   $cc $type ($(( $(date +%s) - start )) s)"
    else
      echo "FAIL $cc $type: see $b.log"; grep -m5 -E 'error|warning' "$b.log" || true
      status=1
    fi
  done
done
# The quick start after a module-only build: a directory configured with
# -DBUILD_TESTING=OFF (as "Building and installing" says) and then set up
# by the suite must hold every test again, not none or stale ones.
b="$root/gcc-Release"
if [ -f "$b/CMakeCache.txt" ]; then
  want=$(ls "$here"/tests/core/test_*.c "$here"/tests/sql/test_*.c "$here"/tests/decode/test_*.c | wc -l)
  cmake -S "$here" -B "$b" -DBUILD_TESTING=OFF >>"$b.log" 2>&1 &&
    cmake --build "$b" -j"$(nproc)" >>"$b.log" 2>&1 &&
    "$here/tests/setup.sh" --suite "$b" -DCMAKE_BUILD_TYPE=Release >>"$b.log" 2>&1
  got=$(cd "$b" && ctest -N 2>/dev/null | sed -n 's/^Total Tests: //p')
  if grep -q '^BUILD_TESTING:BOOL=ON$' "$b/CMakeCache.txt" && [ "${got:-0}" -eq "$want" ]; then
    echo "ok   suite set-up after a module-only build ($got tests)"
  else
    echo "FAIL suite set-up after a module-only build: ${got:-no} tests of $want; see $b.log"
    status=1
  fi
fi
exit $status
