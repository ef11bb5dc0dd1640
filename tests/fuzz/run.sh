#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan + UBSan) and run each of them.
#   tests/fuzz/run.sh [seconds per target, default 20] [build dir, default build-fuzz]
# First every saved crash in tests/fuzz/regressions/<target>/ is replayed
# (each must now pass), then each target fuzzes for the given time from the
# seed corpus (made from the fixtures) plus what earlier runs found, kept in
# <build dir>/fuzz-work/<target>.  Longer runs, e.g. an hour each:
#   tests/fuzz/run.sh 3600
# or one target in the background on its own core:
#   build-fuzz/tests/fuzz/fuzz_sql -max_total_time=3600 build-fuzz/fuzz-work/fuzz_sql build-fuzz/corpus/fuzz_sql
# New crashes land in <build dir>/fuzz-work/crash-*; the script exits 1.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-20}
build=$here/${2:-build-fuzz}
if ! command -v clang >/dev/null 2>&1; then
  echo "installing clang"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang >/dev/null
fi
CC=clang CXX=clang++ cmake -S "$here" -B "$build" -DKL_FUZZ=ON -DKL_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_batch fuzz_index fuzz_offsets fuzz_protobuf fuzz_protobuf_encode fuzz_avro fuzz_metadata fuzz_txnlog fuzz_sql >/dev/null
if [ ! -d "$build/corpus" ] && command -v python3 >/dev/null 2>&1; then
  python3 "$here/tests/fuzz/make_corpus.py" "$here/tests/fixtures" "$build/corpus"
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in fuzz_batch fuzz_index fuzz_offsets fuzz_protobuf fuzz_protobuf_encode fuzz_avro fuzz_metadata fuzz_txnlog fuzz_sql; do
  reg=$here/tests/fuzz/regressions/$t
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    "$build/tests/fuzz/$t" -runs=0 "$reg"/* >/dev/null 2>"$build/$t.regressions.log" ||
      { echo "$t: a saved regression input fails again:"; tail -30 "$build/$t.regressions.log"; status=1; }
  fi
  mkdir -p "$build/fuzz-work/$t"
  seeds=$build/corpus/$t
  [ -d "$seeds" ] || seeds=
  if "$build/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 -timeout=30 \
      -artifact_prefix="$build/fuzz-work/" "$build/fuzz-work/$t" $seeds \
      >"$build/$t.log" 2>&1; then
    echo "$t: $(grep -o 'number_of_executed_units: *[0-9]*' "$build/$t.log" | grep -o '[0-9]*$') executions in ${secs}s, no finding"
  else
    echo "$t: FINDING (see $build/$t.log)"; tail -40 "$build/$t.log"; status=1
  fi
done
exit $status
