#!/usr/bin/env bash
# Set-up shared by the demo and the test suite: install the Debian packages
# the build needs (only those missing), then configure and build.
#   tests/setup.sh [build-dir] [extra cmake arguments...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pkgs="cmake make gcc pkg-config sqlite3 libsqlite3-dev libcmocka-dev zlib1g-dev
      liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev"
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
cmake -S "$here" -B "$here/$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$here/$build" -j"$(nproc)" >/dev/null
