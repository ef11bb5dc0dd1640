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
    if CC=$cc cmake -S "$here" -B "$b" -DCMAKE_BUILD_TYPE=$type -DKL_WERROR=ON >"$b.log" 2>&1 &&
       cmake --build "$b" -j"$(nproc)" >>"$b.log" 2>&1; then
      echo "ok   $cc $type ($(( $(date +%s) - start )) s)"
    else
      echo "FAIL $cc $type: see $b.log"; grep -m5 -E 'error|warning' "$b.log" || true
      status=1
    fi
  done
done
exit $status
