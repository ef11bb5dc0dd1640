#!/usr/bin/env bash
# The module in Node: better-sqlite3 (from npm, compiled from source, about
# a minute the first time) in a build directory, then tests/hosts/node/test.js.
#   tests/hosts/node.sh <path of kafkalog.so> [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
module=$1
dir=${2:-$here/build-node}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "installing: nodejs npm"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
fi
# node-gyp compiles better-sqlite3 with a C++ compiler and make.
for p in g++ make python3; do
  command -v "$p" >/dev/null 2>&1 || missing="${missing:-} $p"
done
if [ -n "${missing:-}" ]; then
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi
mkdir -p "$dir"
if ! cmp -s "$here/tests/hosts/node/package.json" "$dir/package.json" || [ ! -d "$dir/node_modules/better-sqlite3" ]; then
  cp "$here/tests/hosts/node/package.json" "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi
NODE_PATH="$dir/node_modules" node "$here/tests/hosts/node/test.js" "$module" "$here/tests/fixtures"
