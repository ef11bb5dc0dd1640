#!/usr/bin/env bash
# The benchmarks, in one command (not part of the test suite):
#
#   tests/bench/run.sh            full run: 1M x 100 B records (+ codecs), the
#                                 ~1 GB log (1M x 1 KiB) and the two-zone study
#   tests/bench/run.sh --quick    smoke run (20k records, no 1 GB log)
#   tests/bench/run.sh --no-big   full run without the 1 GB log
#
# Installs what the build needs (tests/setup.sh) plus gnuplot, builds into
# build-bench/, and writes tests/bench/out/: bench.json, bench.png,
# bench-big.json, bench-big.png, twozone.json, twozone.png, summary.md.
# The charts are copied to tests/bench/results/ (committed, shown by the
# README).  Data goes to $TMPDIR (default /var/tmp, which must be a real
# disk for the cold-cache figures, not tmpfs) and is deleted afterwards.
# Extra arguments after -- go to bench, e.g. run.sh --no-big -- --records 200000
set -euo pipefail
args="$*"
here=$(cd "$(dirname "$0")/../.." && pwd)
bench_dir="$here/tests/bench"
out="$bench_dir/out"
quick=0
big=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; big=0 ;;
    --no-big) big=0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--quick] [--no-big] [-- bench arguments]" >&2; exit 2 ;;
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
avail_gb=$(df -P -BG "$TMPDIR" | awk 'NR==2 { sub("G", "", $4); print $4 }')
if [ "$avail_gb" -lt "$need_gb" ]; then
  echo "run.sh: need ${need_gb} GB free in $TMPDIR, have ${avail_gb} GB" >&2
  exit 1
fi

mkdir -p "$out" "$bench_dir/results"
rm -f "$out"/*.json "$out"/*.dat "$out"/*.png "$out"/*.txt
bin="$here/build-bench/tests/bench"
cd "$out"
if [ $quick = 1 ]; then
  "$bin/bench" --quick --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/bench.txt"
  "$bin/twozone" --out "$out" --file-mib 2 --grow-pages 16 | tee "$out/twozone.txt"
else
  "$bin/bench" --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/bench.txt"
  if [ $big = 1 ]; then
    "$bin/bench" --big --out "$out" ${extra[@]+"${extra[@]}"} | tee "$out/bench-big.txt"
  fi
  "$bin/twozone" --out "$out" | tee "$out/twozone.txt"
fi

gnuplot -e "dir='$out'; tag='bench'" "$bench_dir/bench.gp"
[ -f "$out/bench-big.dat" ] && gnuplot -e "dir='$out'; tag='bench-big'" "$bench_dir/bench.gp"
gnuplot -e "dir='$out'" "$bench_dir/twozone.gp"

{
  echo "# kafkalog benchmark run"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')," \
       "command: tests/bench/run.sh $args"
  for t in bench bench-big twozone; do
    [ -f "$out/$t.txt" ] || continue
    echo
    echo "## $t"
    echo
    echo '```'
    cat "$out/$t.txt"
    echo '```'
  done
} > "$out/summary.md"

if [ $quick = 0 ]; then
  cp "$out"/*.png "$bench_dir/results/"
fi
echo "results: $out/summary.md"
