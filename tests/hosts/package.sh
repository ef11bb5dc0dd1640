#!/usr/bin/env bash
# The Debian package: build the module alone (-DBUILD_TESTING=OFF, Release),
# make the package with cpack, check what it holds and depends on, install it
# with dpkg into a temporary root and load the module from there in the
# sqlite3 shell.
#   tests/hosts/package.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-build-pkg}
case "$b" in /*) build=$b ;; *) build="$here/$b" ;; esac
cmake -S "$here" -B "$build" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release -DKL_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
rm -f "$build"/kafkalog_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/kafkalog_*.deb)
echo "package: $(basename "$deb")"
dpkg-deb -c "$deb" | grep -q '\./usr/lib/kafkalog\.so$' || { echo "no /usr/lib/kafkalog.so in the package" >&2; exit 1; }
# Every package it depends on is one Debian 12 has (and this machine too).
deps=$(dpkg-deb -f "$deb" Depends)
echo "depends: $deps"
for d in $(echo "$deps" | tr ',' '\n' | sed 's/(.*)//; s/ //g'); do
  dpkg -s "$d" >/dev/null 2>&1 || { echo "dependency $d is not installed here" >&2; exit 1; }
done
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# dpkg itself installs it, into an empty root with a database of its own
# (the dependencies were checked against this machine above).
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: >"$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-not-root -i "$deb" >/dev/null 2>&1 ||
  { echo "dpkg refused the package" >&2; exit 1; }
dpkg --root="$root" -s kafkalog | grep -q '^Status: install ok installed' ||
  { echo "dpkg did not install the package" >&2; exit 1; }
got=$(cd "$here" && sqlite3 :memory: ".load $root/usr/lib/kafkalog" \
  "SELECT count(*) || ' ' || max(offset) FROM kafka_log('tests/fixtures/a-tiny/orders-0');")
[ "$got" = "10 9" ] || { echo "the unpacked module answered '$got', not '10 9'" >&2; exit 1; }
echo "loaded from $root/usr/lib/kafkalog.so: 10 records"
