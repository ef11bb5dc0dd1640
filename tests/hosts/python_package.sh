#!/usr/bin/env bash
# The Python package as a user installs it: `python3 -m pip install .` of
# this clone (no package index: --no-index) into a temporary virtual
# environment and, for Debian's system Python, into a temporary user site
# (pip --user --break-system-packages, PEP 668); then kafkalog.load(),
# kafkalog.loadable_path(), the kafkalog command and the pandas example
# (python/examples/pandas_orders.py), its output checked against SQL.
# CMake's build is kept in build-python/ between runs.
#   tests/hosts/python_package.sh
# Exits 77 (skipped) when Debian's python3-venv or python3-pandas is not
# installed and Debian's archive cannot be reached.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
missing=
for p in python3 python3-venv python3-pandas python3-setuptools python3-pip cmake; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null; }; then
    echo "SKIP$missing not installed and Debian's package archive cannot be reached"
    exit 77
  fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
check() { # what, command...
  local what=$1
  shift
  if out=$("$@" 2>&1); then ok "$what"; else bad "$what"; printf '%s\n' "$out" | tail -20; fi
}
fixtures=$here/tests/fixtures

# What the package must do wherever it is installed: run by a python whose
# kafkalog is the installed one (run from outside the clone).
cat >"$tmp/check.py" <<'PY'
import os, sqlite3, sys
import kafkalog
where, fixtures = sys.argv[1], sys.argv[2]
path = kafkalog.loadable_path()
assert path.startswith(where) and os.path.isfile(path + ".so"), (path, where)
db = sqlite3.connect(":memory:")
kafkalog.load(db)
n, t = db.execute("SELECT count(*), kafka_time(min(timestamp)) FROM kafka_log(?)",
                  (os.path.join(fixtures, "a-tiny", "orders-0"),)).fetchone()
assert (n, t) == (10, "2023-11-14T22:13:20.000Z"), (n, t)
try:
    db.execute("SELECT load_extension('x')")
    raise AssertionError("extension loading was left on")
except sqlite3.OperationalError:
    pass
print("kafkalog", kafkalog.__file__, "->", path)
PY
# The example's lines, computed without pandas.
cat >"$tmp/expect.py" <<'PY'
import sqlite3, sys
import kafkalog
db = sqlite3.connect(":memory:")
kafkalog.load(db)
q = ("FROM kafka_log(?) WHERE topic = 'orders' AND timestamp >= kafka_ms(?)")
n, lo, hi = db.execute("SELECT count(*), kafka_time(min(timestamp)), kafka_time(max(timestamp)) " + q,
                       sys.argv[1:3]).fetchone()
print(f"{n} orders from {lo[:-1]}+00:00 to {hi[:-1]}+00:00")
for p, m, k in db.execute("SELECT partition, strftime('%H:%M', timestamp / 1000, 'unixepoch'), count(*) "
                          + q + " GROUP BY 1, 2 ORDER BY 1, 2", sys.argv[1:3]):
    print(f"partition {p} {m} {k}")
PY

example() { # python, label
  local want got
  for since in 2023-11-14T22:13:00Z "2023-11-14 23:15:30+01:00"; do
    want=$(cd "$tmp" && "$1" expect.py "$fixtures/broker" "$since") &&
      got=$(cd "$tmp" && "$1" "$here/python/examples/pandas_orders.py" "$fixtures/broker" "$since")
    if [ "$?" -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
      ok "$2: the pandas example from $since ($(echo "$got" | head -n 1))"
    else
      bad "$2: the pandas example from $since"
      diff <(echo "$want") <(echo "$got") | head -20
    fi
  done
}

# A plain virtual environment: pip 23.0 and setuptools only (no wheel), so
# pip runs setup.py itself, with no index.
"$py" -m venv "$tmp/plain"
check "pip install . in a plain venv" "$tmp/plain/bin/python" -m pip install --no-index --no-cache-dir "$here"
check "plain venv: load, loadable_path, kafka_time" \
  sh -c 'cd "$1" && "$2" check.py "$3" "$4"' - "$tmp" "$tmp/plain/bin/python" "$tmp/plain/lib" "$fixtures"

# A virtual environment that sees Debian's pandas (and python3-wheel, so
# pip builds a wheel).
venv=$tmp/venv
"$py" -m venv --system-site-packages "$venv"
check "pip install . in a venv (pip $("$venv/bin/python" -m pip --version | cut -d' ' -f2), no index)" \
  "$venv/bin/python" -m pip install --no-index --no-cache-dir "$here"
check "venv: load, loadable_path, kafka_time" \
  sh -c 'cd "$1" && "$2" check.py "$3" "$4"' - "$tmp" "$venv/bin/python" "$venv/lib" "$fixtures"
got=$("$venv/bin/kafkalog" "$fixtures/broker" "SELECT count(*) FROM payments WHERE time < '2023-11-14T22:13:25'" 2>&1)
want=$(cd "$tmp" && "$venv/bin/python" -c "
import sqlite3, kafkalog, sys
db = sqlite3.connect(':memory:'); kafkalog.load(db)
print(db.execute(\"SELECT count(*) FROM kafka_log(?) WHERE topic = 'payments' AND timestamp < kafka_ms('2023-11-14T22:13:25')\", (sys.argv[1],)).fetchone()[0])" "$fixtures/broker")
if [ "$got" = "$want" ] && [ "$got" -gt 0 ]; then ok "venv: the kafkalog command ($got payments)"; else bad "venv: the kafkalog command: '$got', want '$want'"; fi
example "$venv/bin/python" venv

# Debian's system Python: PEP 668 marks it externally managed, so pip
# installs into a user site only when told to; the user site here is a
# temporary one (PYTHONUSERBASE), not this machine's.
export PYTHONUSERBASE=$tmp/user
check "system python: pip install --user --break-system-packages ." \
  "$py" -m pip install --user --break-system-packages --no-index --no-cache-dir "$here"
check "system python: load, loadable_path, kafka_time" \
  sh -c 'cd "$1" && "$2" check.py "$3" "$4"' - "$tmp" "$py" "$PYTHONUSERBASE" "$fixtures"
example "$py" "system python"
unset PYTHONUSERBASE
[ "$fails" -eq 0 ]
