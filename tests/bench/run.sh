#!/usr/bin/env bash
# The benchmarks, in one command (not part of the test suite):
#
#   tests/bench/run.sh            full run: 1M x 100 B records (+ codecs), the
#                                 ~1 GB log (1M x 1 KiB), the everyday queries
#                                 and the two-zone study
#   tests/bench/run.sh --quick    smoke run (20k records, no 1 GB log)
#   tests/bench/run.sh --no-big   full run without the 1 GB log
#   tests/bench/run.sh --queries-only [--quick]   just the everyday queries
#   tests/bench/run.sh --broker-only [--quick]    just the log directory of
#                                 2,000 partitions (broker.c)
#   tests/bench/run.sh --insert-only [--quick]    just writing (insert.c):
#                                 INSERT into kafka_log against a native table
#   tests/bench/run.sh --logdir-only [--quick]    just the keyed log
#                                 directories (logdir.c): key searches,
#                                 DISTINCT topic, per-partition counts, memory
#   tests/bench/run.sh --goals [--quick]          the figures with goals:
#                                 queries, logdir and broker in one run, and
#                                 goals.txt, every goal's row with its verdict
#
# Installs what the build needs (tests/setup.sh) plus gnuplot, builds into
# build-bench/, and writes tests/bench/out/: bench.json, bench.png,
# bench-big.json, bench-big.png, queries.json, queries.png, twozone.json,
# twozone.png, broker.json, insert.json, logdir.json, goals.txt, summary.md
# (what this run made; the --*-only runs replace only their own files).
# The full run includes all of them.
# The charts are copied to tests/bench/results/ (committed, shown by the
# README).  Data goes to $TMPDIR (default /var/tmp, which must be a real
# disk for the cold-cache figures, not tmpfs) and is deleted afterwards.
# Extra arguments after -- go to bench (to queries with --queries-only, to
# broker with --broker-only), e.g.
# run.sh --no-big -- --records 200000
set -euo pipefail
args="$*"
here=$(cd "$(dirname "$0")/../.." && pwd)
bench_dir="$here/tests/bench"
out="$bench_dir/out"
quick=0
big=1
queries_only=0
broker_only=0
insert_only=0
logdir_only=0
goals=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; big=0 ;;
    --no-big) big=0 ;;
    --queries-only) queries_only=1; big=0 ;;
    --broker-only) broker_only=1; big=0 ;;
    --insert-only) insert_only=1; big=0 ;;
    --logdir-only) logdir_only=1; big=0 ;;
    --goals) goals=1; big=0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--quick] [--no-big] [--queries-only] [--broker-only] [--insert-only] [--logdir-only] [--goals] [-- bench, queries, broker, insert or logdir arguments]" >&2
       exit 2 ;;
  esac
  shift
done

"$here/tests/setup.sh" build-bench -DKL_BENCH=ON
if ! command -v gnuplot >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  echo "installing: gnuplot-nox"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq gnuplot-nox >/dev/null
fi

export TMPDIR=${TMPDIR:-/var/tmp}
need_gb=1
[ $big = 1 ] && need_gb=4
# the keyed log directories (logdir: 13M records and their native twins)
[ $quick = 0 ] && [ $queries_only = 0 ] && [ $broker_only = 0 ] && [ $insert_only = 0 ] && need_gb=4
avail_gb=$(df -P -BG "$TMPDIR" | awk 'NR==2 { sub("G", "", $4); print $4 }')
if [ "$avail_gb" -lt "$need_gb" ]; then
  echo "run.sh: need ${need_gb} GB free in $TMPDIR, have ${avail_gb} GB" >&2
  exit 1
fi

mkdir -p "$out" "$bench_dir/results"
if [ $queries_only = 1 ]; then
  rm -f "$out"/queries.* "$out/summary.md"
elif [ $broker_only = 1 ]; then
  rm -f "$out"/broker.* "$out/summary.md"
elif [ $insert_only = 1 ]; then
  rm -f "$out"/insert.* "$out/summary.md"
elif [ $logdir_only = 1 ]; then
  rm -f "$out"/logdir.* "$out/summary.md"
elif [ $goals = 1 ]; then
  rm -f "$out"/queries.* "$out"/logdir.* "$out"/broker.* "$out/goals.txt" "$out/summary.md"
else
  rm -f "$out"/*.json "$out"/*.dat "$out"/*.png "$out"/*.txt "$out/summary.md"
fi
bin="$here/build-bench/tests/bench"
q=()
[ $quick = 1 ] && q=(--quick)
cd "$out"
ran=()
if [ $queries_only = 1 ]; then
  "$bin/queries" ${q[@]+"${q[@]}"} --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/queries.txt"
  ran=(queries)
elif [ $broker_only = 1 ]; then
  "$bin/broker" ${q[@]+"${q[@]}"} --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/broker.txt"
  ran=(broker)
elif [ $insert_only = 1 ]; then
  "$bin/insert" ${q[@]+"${q[@]}"} --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/insert.txt"
  ran=(insert)
elif [ $logdir_only = 1 ]; then
  "$bin/logdir" ${q[@]+"${q[@]}"} --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/logdir.txt"
  ran=(logdir)
elif [ $goals = 1 ]; then
  "$bin/queries" ${q[@]+"${q[@]}"} --out "$out" | tee "$out/queries.txt"
  "$bin/logdir" ${q[@]+"${q[@]}"} --out "$out" | tee "$out/logdir.txt"
  "$bin/broker" ${q[@]+"${q[@]}"} --out "$out" | tee "$out/broker.txt"
  ran=(queries logdir broker)
elif [ $quick = 1 ]; then
  "$bin/insert" --quick --out "$out" | tee "$out/insert.txt"
  "$bin/bench" --quick --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/bench.txt"
  "$bin/queries" --quick --out "$out" | tee "$out/queries.txt"
  "$bin/twozone" --out "$out" --file-mib 2 --grow-pages 16 | tee "$out/twozone.txt"
  "$bin/logdir" --quick --out "$out" | tee "$out/logdir.txt"
  "$bin/broker" --quick --out "$out" | tee "$out/broker.txt"
  ran=(insert bench queries twozone logdir broker)
else
  "$bin/bench" --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/bench.txt"
  ran=(bench)
  if [ $big = 1 ]; then
    "$bin/bench" --big --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/bench-big.txt"
    ran+=(bench-big)
  fi
  "$bin/queries" --out "$out" | tee "$out/queries.txt"
  "$bin/twozone" --out "$out" | tee "$out/twozone.txt"
  "$bin/insert" --out "$out" | tee "$out/insert.txt"
  "$bin/logdir" --out "$out" | tee "$out/logdir.txt"
  "$bin/broker" --out "$out" | tee "$out/broker.txt"
  ran+=(queries twozone insert logdir broker)
fi

for t in "${ran[@]}"; do
  case $t in
    bench|bench-big) gnuplot -e "dir='$out'; tag='$t'" "$bench_dir/bench.gp" ;;
    queries) gnuplot -e "dir='$out'; tag='queries'" "$bench_dir/queries.gp" ;;
    twozone) gnuplot -e "dir='$out'" "$bench_dir/twozone.gp" ;;
    broker|insert|logdir) ;; # a table, no chart
  esac
done

{
  echo "# kafkalog benchmark run"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')," \
       "command: tests/bench/run.sh $args"
  for t in "${ran[@]}"; do
    [ -f "$out/$t.txt" ] || continue
    echo
    echo "## $t"
    echo
    echo '```'
    cat "$out/$t.txt"
    echo '```'
  done
} > "$out/summary.md"

# Every row with a goal, its verdict (ok, MISS, WRONG, n/a) beside it.
for t in queries logdir broker; do
  [ -f "$out/$t.txt" ] || continue
  echo "## $t"
  if [ $t = logdir ]; then
    # logdir's verdict ends the row, and a value with a goal (peak memory,
    # batches decoded) has "-" for its ratio: only a "-" goal is no goal.
    grep -E '^[0-9]+[a-z]? .* (ok|MISS|WRONG|n/a)$' "$out/$t.txt" | grep -vE ' - +(n/a)?$' || true
  else
    grep -E '^[0-9]+[a-z]? .* (ok|MISS|WRONG|n/a)( |$)' "$out/$t.txt" | grep -vE ' - +(n/a)?( |$)' || true
  fi
done > "$out/goals.txt"

if [ $quick = 0 ]; then
  for t in "${ran[@]}"; do
    if [ -f "$out/$t.png" ]; then cp "$out/$t.png" "$bench_dir/results/"; fi
  done
fi
echo "results: $out/summary.md (the rows with goals: $out/goals.txt)"
