#!/usr/bin/env bash
# The Debian package: build the module alone (-DBUILD_TESTING=OFF, Release),
# make the package with cpack, check what it holds and depends on, install it
# with dpkg into a temporary root and load the module from there in the
# sqlite3 shell, run the kafkalog command it installs and import its Python
# package with Debian's python3.
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
files=$(dpkg-deb -c "$deb")
for f in usr/lib/kafkalog.so usr/bin/kafkalog usr/lib/python3/dist-packages/kafkalog/__init__.py; do
  printf '%s\n' "$files" | grep -q " \./$f\$" || { echo "no /$f in the package" >&2; exit 1; }
done
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
# The command, as installed: it finds the module at ../lib from /usr/bin.
got=$(cd "$here" && "$root/usr/bin/kafkalog" -csv tests/fixtures/broker \
  "SELECT count(*), min(time) FROM orders WHERE partition = 0")
[ "$got" = "10,2023-11-14T22:13:20.000Z" ] || { echo "the installed kafkalog command answered '$got'" >&2; exit 1; }
rc=0
msg=$("$root/usr/bin/kafkalog" "$root/usr" "SELECT 1" 2>&1) || rc=$?
case "$rc:$msg" in
  "2:kafkalog: $root/usr is not a Kafka partition directory"*) ;;
  *) echo "kafkalog over a directory that is not Kafka's: exit $rc, '$msg'" >&2; exit 1 ;;
esac
echo "the installed kafkalog command: 10 orders in partition 0; $root/usr refused (exit 2)"
# Debian's python3 with the package's dist-packages (as /usr/lib/python3/dist-packages).
got=$(cd / && PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c '
import sqlite3, sys, kafkalog
db = sqlite3.connect(":memory:")
kafkalog.load(db)
print(kafkalog.loadable_path(), db.execute("SELECT count(*) FROM kafka_log(?)", (sys.argv[1],)).fetchone()[0])
' "$here/tests/fixtures/a-tiny/orders-0")
[ "$got" = "$root/usr/lib/kafkalog 10" ] || { echo "python3 with the package answered '$got'" >&2; exit 1; }
echo "python3: import kafkalog loads $root/usr/lib/kafkalog.so: 10 records"
got=$(cd "$here" && PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -m kafkalog \
  tests/fixtures/a-tiny/orders-0 "SELECT count(*) FROM orders")
[ "$got" = 10 ] || { echo "python3 -m kafkalog answered '$got'" >&2; exit 1; }
echo "python3 -m kafkalog runs $root/usr/bin/kafkalog: 10 records"
