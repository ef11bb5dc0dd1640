#!/usr/bin/env bash
# The npm package as a user installs it: `npm install <this clone>` in a
# temporary project (its install script runs the module-only CMake build,
# kept in build-npm/ of the clone), then tests/hosts/npm/test.js with
# better-sqlite3 from tests/hosts/node.sh's build directory; and what
# `npm pack` ships (a registry's copy) configures with CMake.
#   tests/hosts/npm_package.sh [node build-dir]
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$here/build-node}
if [ ! -d "$dir/node_modules/better-sqlite3" ] || ! command -v npm >/dev/null 2>&1; then
  echo "SKIP better-sqlite3 is not in $dir/node_modules (tests/hosts/node.sh installs it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/project"
echo '{"name": "kafkalog-user", "private": true}' >"$tmp/project/package.json"
rm -f "$here/node/kafkalog.so" # the install script must make it
if (cd "$tmp/project" && npm install --no-audit --no-fund --loglevel=error "$here" >"$tmp/npm.log" 2>&1) &&
   [ -f "$here/node/kafkalog.so" ]; then
  echo "ok   npm install of the clone (npm $(npm --version)) built node/kafkalog.so"
else
  echo "FAIL npm install of the clone"; tail -20 "$tmp/npm.log"; exit 1
fi
# Run from the project, so that require('kafkalog') resolves as a user's does.
cp "$here/tests/hosts/npm/test.js" "$tmp/project/test.js"
(cd "$tmp/project" && NODE_PATH="$dir/node_modules" node test.js "$here/tests/fixtures" "$here")
rc=$?
# The packed package holds every source the module's build names.
if (cd "$tmp" && npm pack --silent "$here" >/dev/null 2>"$tmp/pack.log") && tar -xzf "$tmp"/kafkalog-*.tgz -C "$tmp" &&
   cmake -S "$tmp/package" -B "$tmp/package-build" -DBUILD_TESTING=OFF >"$tmp/cmake.log" 2>&1; then
  echo "ok   npm pack: $(tar -tzf "$tmp"/kafkalog-*.tgz | wc -l) files, and CMake configures from them"
else
  echo "FAIL npm pack: the packed sources do not configure"; tail -20 "$tmp/pack.log" "$tmp/cmake.log"; rc=1
fi
exit $rc
