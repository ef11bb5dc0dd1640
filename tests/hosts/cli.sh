#!/usr/bin/env bash
# The kafkalog command (cli/kafkalog) against tests/fixtures: its views
# answer what kafka_log answers, sqlite3's output modes pass through, the
# banner says what it opened, odd names (quotes, spaces, a dotted topic, a
# partition directory not named <topic>-<partition>) work, and a path that
# is not Kafka's or bad usage exits 2 with a clear message.
#   tests/hosts/cli.sh <path of kafkalog.so>
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
export KAFKALOG_MODULE=${1:-$here/build/kafkalog.so}
kl=$here/cli/kafkalog
fx=$here/tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # what, want, got
  if [ "$2" = "$3" ]; then echo "ok   $1"; else
    echo "FAIL $1"; echo "  want: $2"; echo "  got:  $3"; fails=$((fails + 1)); fi
}
expect_fail() { # what, exit code, message prefix, args...
  local what=$1 code=$2 prefix=$3 out rc=0
  shift 3
  out=$("$@" 2>&1 </dev/null) || rc=$?
  case "$rc:$out" in
    "$code:$prefix"*) echo "ok   $what (exit $rc: $(echo "$out" | tail -n 1 | cut -c1-90))" ;;
    *) echo "FAIL $what: exit $rc, '$out'"; fails=$((fails + 1)) ;;
  esac
}
sql() { sqlite3 -batch -cmd ".load ${KAFKALOG_MODULE%.so}" :memory: "$1"; }

expect "a partition directory: one view, named after its topic" "orders" \
  "$("$kl" "$fx/a-tiny/orders-0" "SELECT group_concat(name) FROM sqlite_temp_master WHERE type = 'view'")"
expect "a log directory: one view per topic" "__consumer_offsets,clicks,orders,payments" \
  "$("$kl" "$fx/broker" "SELECT group_concat(name) FROM (SELECT name FROM sqlite_temp_master WHERE type = 'view' ORDER BY 1)")"
for t in orders payments clicks; do
  expect "view $t: the records kafka_log has for the topic" \
    "$(sql "SELECT count(*), sum(offset), sum(length(value)) FROM kafka_log('$fx/broker') WHERE topic = '$t'")" \
    "$("$kl" "$fx/broker" "SELECT count(*), sum(offset), sum(length(value)) FROM $t")"
done
expect "time is kafka_time(timestamp), first" "time|0" \
  "$("$kl" "$fx/broker" "SELECT (SELECT name FROM pragma_table_info('orders') WHERE cid = 0), count(*) FROM orders WHERE time IS NOT kafka_time(timestamp)")"
expect "a WHERE on the view is pushed down (partition, offset)" "1|4242" \
  "$("$kl" "$fx/broker" "SELECT count(*), max(offset) FROM orders WHERE partition = 1 AND offset = 4242")"
expect "key_type through the view" "42" \
  "$("$kl" "$fx/b-multi-segment/orders-0" "SELECT offset FROM orders WHERE key_type = 'text' AND key = '00000042'")"
expect "read_committed through the view" \
  "$(sql "SELECT count(*) FROM kafka_log('$fx/broker') WHERE topic = 'payments' AND isolation = 'read_committed'")" \
  "$("$kl" "$fx/broker" "SELECT count(*) FROM payments WHERE isolation = 'read_committed'")"

# sqlite3's output modes, passed through in the order given.
expect "-csv -header" "offset,time|0,2023-11-14T22:13:20.000Z|1,2023-11-14T22:13:20.010Z" \
  "$("$kl" -csv -header "$fx/a-tiny/orders-0" "SELECT offset, time FROM orders LIMIT 2" | tr -d '\r' | paste -sd '|')"
expect "-json" '[{"offset":9,"time":"2023-11-14T22:13:20.090Z"}]' \
  "$("$kl" -json "$fx/a-tiny/orders-0" "SELECT offset, time FROM orders WHERE offset = 9")"
box=$("$kl" -box "$fx/a-tiny/orders-0" "SELECT offset FROM orders LIMIT 1")
expect "-box" "┌────────┐|│ offset │|├────────┤|│ 0      │|└────────┘" "$(echo "$box" | paste -sd '|')"
expect "options after PATH, -separator SEP, -nullvalue TEXT" "0;-" \
  "$("$kl" "$fx/a-tiny/orders-0" -separator ';' -nullvalue - "SELECT offset, NULL FROM orders LIMIT 1")"
expect "-line" "offset = 3" "$("$kl" -line "$fx/a-tiny/orders-0" "SELECT offset FROM orders WHERE offset = 3" | sed 's/^ *//')"

# The shell, with its banner (only at a terminal, or with -interactive).
out=$(echo "SELECT count(*) FROM payments;" | "$kl" -interactive "$fx/broker" 2>&1)
expect "the banner: what was opened, one line" \
  "kafkalog: log directory $fx/broker: 6 partition(s) of 4 topic(s), 834 KiB; views: __consumer_offsets clicks orders payments (SELECT * FROM clicks LIMIT 10)" \
  "$(echo "$out" | head -n 1)"
expect "the shell runs what it reads" "1" "$(echo "$out" | grep -c '^1200$')"
expect "no banner when input is not a terminal" "10" \
  "$(echo "SELECT count(*) FROM orders;" | "$kl" "$fx/a-tiny/orders-0")"

# Odd names: a quote and a space in the path, a dotted topic, a partition
# directory whose name is not <topic>-<partition>.
mkdir -p "$tmp/it's a dir"
ln -s "$fx/a-tiny/orders-0" "$tmp/it's a dir/my.events-0"
ln -s "$fx/a-tiny/orders-0" "$tmp/it's a dir/orders-3"
expect "a quote and a space in PATH; a dotted topic is also my_events" "10|10|10" \
  "$("$kl" "$tmp/it's a dir" "SELECT (SELECT count(*) FROM \"my.events\"), (SELECT count(*) FROM my_events), (SELECT count(*) FROM orders WHERE partition = 3)")"
ln -s "$fx/a-tiny/orders-0" "$tmp/snapshot"
expect "a partition directory not named <topic>-<partition>: the view log" "log|10" \
  "$("$kl" "$tmp/snapshot" "SELECT (SELECT group_concat(name) FROM sqlite_temp_master), count(*) FROM log")"

# Errors: exit 2 and a message naming the path.
mkdir "$tmp/empty"
expect_fail "a directory that is not Kafka's" 2 "kafkalog: $tmp/empty is not a Kafka partition directory" \
  "$kl" "$tmp/empty"
expect_fail "a path that does not exist" 2 "kafkalog: cannot open directory $tmp/nope: No such file or directory" \
  "$kl" "$tmp/nope" "SELECT 1"
expect_fail "no PATH: the usage" 2 "usage: kafkalog" "$kl"
expect_fail "an unknown option" 2 "usage: kafkalog" "$kl" -frobnicate "$fx/broker"
expect_fail "two statements unquoted" 2 "usage: kafkalog" "$kl" "$fx/broker" SELECT 1
expect_fail "-separator without its value" 2 "kafkalog: -separator needs a value" "$kl" "$fx/broker" -separator
expect_fail "no module" 2 "kafkalog: no module at /nonexistent/kafkalog.so" \
  env KAFKALOG_MODULE=/nonexistent/kafkalog.so "$kl" "$fx/broker"
expect_fail "a SQL error is sqlite3's, with its exit code" 1 "Error: in prepare, near \"SELEC\"" "$kl" "$fx/broker" "SELEC 1"
expect "-help exits 0" "0" "$("$kl" -help >/dev/null; echo $?)"
expect "-version is the module's" "$(sql "SELECT kafka_log_version()")" "$("$kl" -version)"
# Installed layout: bin/kafkalog finds lib/kafkalog.so without KAFKALOG_MODULE.
mkdir -p "$tmp/prefix/bin" "$tmp/prefix/lib"
cp "$kl" "$tmp/prefix/bin/kafkalog"
cp "$KAFKALOG_MODULE" "$tmp/prefix/lib/kafkalog.so"
ln -s "$tmp/prefix/bin/kafkalog" "$tmp/kl-link"
expect "installed as bin/ and lib/, called through a symlink" "10" \
  "$(env -u KAFKALOG_MODULE "$tmp/kl-link" "$fx/a-tiny/orders-0" "SELECT count(*) FROM orders")"
if [ -f "$here/build/kafkalog.so" ]; then
  expect "in a built clone, cli/kafkalog finds build/kafkalog.so" "10" \
    "$(env -u KAFKALOG_MODULE "$kl" "$fx/a-tiny/orders-0" "SELECT count(*) FROM orders")"
fi
[ "$fails" -eq 0 ]
