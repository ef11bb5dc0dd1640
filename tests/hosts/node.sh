#!/usr/bin/env bash
# The module in Node: better-sqlite3 (from npm, compiled from source, about
# a minute the first time) in a build directory, then tests/hosts/node/test.js.
#   tests/hosts/node.sh <path of kafkalog.so> [build-dir]
# Exits 77 (skipped, not passed) when a registry it needs, Debian's or
# npm's, cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
module=$1
dir=${2:-$here/build-node}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "installing: nodejs npm"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null; }; then
    echo "SKIP nodejs and npm are not installed and Debian's package archive cannot be reached"
    exit 77
  fi
fi
# node-gyp compiles better-sqlite3 with a C++ compiler and make.
for p in g++ make python3; do
  command -v "$p" >/dev/null 2>&1 || missing="${missing:-} $p"
done
if [ -n "${missing:-}" ]; then
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null; }; then
    echo "SKIP$missing not installed and Debian's package archive cannot be reached"
    exit 77
  fi
fi
mkdir -p "$dir"
if ! cmp -s "$here/tests/hosts/node/package.json" "$dir/package.json" || [ ! -d "$dir/node_modules/better-sqlite3" ]; then
  cp "$here/tests/hosts/node/package.json" "$dir/package.json"
  if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null); then
    # A registry that answers and an install that fails is a failure; one
    # that cannot be reached means the check cannot run here.
    if ! (cd "$dir" && timeout 60 npm ping >/dev/null 2>&1); then
      echo "SKIP better-sqlite3 is not installed and the npm registry cannot be reached"
      exit 77
    fi
    echo "FAIL npm install of better-sqlite3 in $dir"
    exit 1
  fi
fi
NODE_PATH="$dir/node_modules" node "$here/tests/hosts/node/test.js" "$module" "$here/tests/fixtures"
