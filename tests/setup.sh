#!/usr/bin/env bash
# Set-up shared by the demo and the test suite: install the Debian packages
# the build needs (only those missing), then configure and build.
#   tests/setup.sh [--suite] [build-dir] [extra cmake arguments...]
# --suite configures the build the way the test suite runs it: the tests
# built (BUILD_TESTING=ON) and warnings as errors, whatever an earlier
# configuration of the same directory left in its cache (a user's
# -DBUILD_TESTING=OFF build in build/ would otherwise leave the suite
# without tests, or with stale test binaries).  build-dir is relative to
# the repository root unless absolute.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
suite=
if [ "${1:-}" = --suite ]; then suite=1; shift; fi
pkgs="cmake make gcc pkg-config sqlite3 libsqlite3-dev libcmocka-dev zlib1g-dev
      liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev libjansson-dev python3-avro g++
      libprotobuf-dev libprotoc-dev protobuf-compiler python3-protobuf python3-yaml"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi
build=${1:-build}
shift || true
case $build in /*) ;; *) build=$here/$build ;; esac
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ -n "$suite" ]; then
  flags+=(-DBUILD_TESTING=ON -DKL_WERROR=ON -DKL_BENCH=ON -DKL_FUZZ=OFF -DKL_SANITIZE=OFF)
fi
cmake -S "$here" -B "$build" "${flags[@]}" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
