#!/usr/bin/env bash
# Each package installed the way the README tells a new user, in a fresh
# Debian 12 root (debootstrap, minbase) from a clone of this repository:
#   - the Debian package: the README's build packages, cmake, cpack,
#     apt-get install ./build/kafkalog_*.deb, then the kafkalog command
#     and the sqlite3 shell over a fixture;
#   - the Python package: python3 -m pip install . in a venv (and one with
#     --system-site-packages running the pandas example);
#   - the npm package: npm install <clone> better-sqlite3@12 in a new
#     project, then require('kafkalog').load(db) on a fixture.
# Needs root (chroot, mounts).  The minbase root is made once and kept as a
# tarball in $KL_DEBOOTSTRAP_CACHE (default /var/tmp/kafkalog-debootstrap),
# with apt's downloaded packages and npm's cache, so a rerun downloads
# nothing it has already.  The clone is of the committed HEAD.
#   tests/hosts/debootstrap.sh
# Exits 77 (skipped) when not root, or when debootstrap or Debian's archive
# is out of reach.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=${KL_DEBOOTSTRAP_CACHE:-/var/tmp/kafkalog-debootstrap}
mirror=${KL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
start=$(date +%s)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP a chroot needs root"
  exit 77
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }; then
    echo "SKIP debootstrap is not installed and Debian's package archive cannot be reached"
    exit 77
  fi
fi
mkdir -p "$cache/archives/partial" "$cache/npm"
tarball=$cache/bookworm-minbase.tar.gz
if [ ! -s "$tarball" ]; then
  fresh=$(mktemp -d "$cache/make.XXXXXX")
  if ! debootstrap --variant=minbase bookworm "$fresh" "$mirror" >"$cache/debootstrap.log" 2>&1; then
    echo "SKIP debootstrap of bookworm failed (see $cache/debootstrap.log)"
    tail -5 "$cache/debootstrap.log"
    rm -rf "$fresh"
    exit 77
  fi
  rm -rf "$fresh"/var/cache/apt/archives/*.deb
  tar -C "$fresh" -czf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf "$fresh"
  echo "ok   debootstrap --variant=minbase bookworm: $tarball ($(( $(date +%s) - start )) s)"
fi

root=$(mktemp -d /var/tmp/kafkalog-root.XXXXXX)
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" -xzf "$tarball"
bind() { # host-dir, dir in the root
  mkdir -p "$root$2" && mount --bind "$1" "$root$2" && mounted+=("$root$2")
}
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
bind /dev /dev
bind "$cache/archives" /var/cache/apt/archives
bind "$cache/npm" /root/.npm
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine's own trust roots too (a proxy's CA, where HTTPS goes through
# one): ca-certificates adds them when it is installed below.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
# Keep the packages apt downloads (the next run installs from them).
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/01keep"
rm -f "$root/etc/apt/apt.conf.d/docker-clean"
git clone -q "$here" "$root/home/user/kafkalog"
echo "clone: $(git -C "$here" log -1 --format='%h %s' | cut -c1-72)"

# The user's steps, as root inside the fresh root, one script per package.
fails=0
run() { # title, script (bash, run in the clone)
  local t0 out
  t0=$(date +%s)
  out=$(chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c "cd /home/user/kafkalog; $2" 2>&1)
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok   $1 ($(( $(date +%s) - t0 )) s)"
    printf '%s\n' "$out" | grep '^  ' || true
  else
    echo "FAIL $1 (exit $rc)"
    printf '%s\n' "$out" | tail -30 | sed 's/^/     /'
    fails=$((fails + 1))
  fi
}

# The packages of the README's "Install" (tests/setup.sh's build list, less
# the test suite's), and the hosts' own: Debian's python3 and node.
run "apt-get install of the build's packages, python3, nodejs, npm" '
apt-get update -qq
apt-get install -y -qq --no-install-recommends cmake make gcc g++ pkg-config libsqlite3-dev zlib1g-dev \
  liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev libjansson-dev libprotobuf-dev libprotoc-dev \
  sqlite3 ca-certificates python3 python3-venv python3-pip python3-setuptools python3-pandas \
  nodejs npm >/dev/null
echo "  node $(node --version), npm $(npm --version), $(python3 --version), $(sqlite3 --version | cut -d" " -f1)"'

run "the Debian package: cpack, apt-get install ./build/kafkalog_*.deb, the kafkalog command" '
cmake -S . -B build -DBUILD_TESTING=OFF >/dev/null && cmake --build build -j"$(nproc)" >/dev/null
(cd build && cpack -G DEB >/dev/null)
apt-get install -y -qq ./build/kafkalog_*_amd64.deb >/dev/null
cd /tmp
got=$(kafkalog /home/user/kafkalog/tests/fixtures/broker "SELECT time, partition, offset FROM orders LIMIT 3")
echo "$got" | sed "s/^/  /"
[ "$(echo "$got" | head -1)" = "2023-11-14T22:13:20.000Z|0|0" ]
got=$(sqlite3 -cmd ".load /usr/lib/kafkalog" :memory: "SELECT count(*) FROM kafka_log('"'"'/home/user/kafkalog/tests/fixtures/a-tiny/orders-0'"'"')")
[ "$got" = 10 ]
sqlite3 -cmd ".load /usr/lib/kafkalog" :memory: "SELECT kafka_log_version()" | sed "s/^/  /"
got=$(python3 -c "import sqlite3, kafkalog; db = sqlite3.connect(\":memory:\"); kafkalog.load(db); print(db.execute(\"SELECT count(*) FROM kafka_log(?)\", (\"/home/user/kafkalog/tests/fixtures/a-tiny/orders-0\",)).fetchone()[0])")
[ "$got" = 10 ]
echo "  python3 with the package: import kafkalog, 10 records"
apt-get remove -y -qq kafkalog >/dev/null
! command -v kafkalog'

run "the Python package: pip install . in a venv, then its example" '
python3 -m venv /home/user/venv
/home/user/venv/bin/python -m pip install -q --no-cache-dir .
cd /tmp
got=$(/home/user/venv/bin/python -c "
import sqlite3, kafkalog
db = sqlite3.connect(\":memory:\")
kafkalog.load(db)
print(db.execute(\"SELECT count(*), kafka_time(min(timestamp)) FROM kafka_log(?)\",
                 (\"/home/user/kafkalog/tests/fixtures/a-tiny/orders-0\",)).fetchone())")
echo "  venv: $got from $(/home/user/venv/bin/python -c "import kafkalog; print(kafkalog.loadable_path())")"
[ "$got" = "(10, '"'"'2023-11-14T22:13:20.000Z'"'"')" ]
got=$(/home/user/venv/bin/kafkalog /home/user/kafkalog/tests/fixtures/broker "SELECT count(*) FROM orders")
[ "$got" -gt 0 ]
echo "  venv: the kafkalog command counts $got orders"
python3 -m venv --system-site-packages /home/user/venv-pandas
/home/user/venv-pandas/bin/python -m pip install -q --no-cache-dir /home/user/kafkalog
out=$(/home/user/venv-pandas/bin/python /home/user/kafkalog/python/examples/pandas_orders.py \
      /home/user/kafkalog/tests/fixtures/broker 2023-11-14T22:13:00Z)
echo "$out" | head -3 | sed "s/^/  pandas: /"
echo "$out" | head -1 | grep -q "^[1-9][0-9]* orders from 2023-11-14T22:13"'

run "the npm package: npm install <clone> better-sqlite3@12, then its example" '
mkdir -p /home/user/app && cd /home/user/app
echo "{\"name\": \"app\", \"private\": true}" >package.json
npm install --no-audit --no-fund --loglevel=error /home/user/kafkalog better-sqlite3@12 >/tmp/npm.log 2>&1 ||
  { tail -30 /tmp/npm.log; exit 1; }
got=$(node -e "
const db = require(\"better-sqlite3\")(\":memory:\");
require(\"kafkalog\").load(db);
const r = db.prepare(\"SELECT count(*) AS n, kafka_time(min(timestamp)) AS t FROM kafka_log(?)\")
  .get(\"/home/user/kafkalog/tests/fixtures/a-tiny/orders-0\");
console.log(r.n, r.t, require(\"kafkalog\").getLoadablePath());")
echo "  node: $got"
[ "${got%% /*}" = "10 2023-11-14T22:13:20.000Z" ]'

echo "debootstrap check: $(( $(date +%s) - start )) s in all"
[ "$fails" -eq 0 ]
