#!/usr/bin/env bash
# fuzz/libfuzzer/run.sh HARNESS [libFuzzer flags...]: a bounded, fixed-seed
# run of one libFuzzer harness (view_index_fuzzer, entry_points_fuzzer), as
# ctest's fuzz.libFuzzer.* tests run it. Builds the harness first, with clang
# in its own build dir (ci/sanitize.sh --fuzzers). Exits 77 (ctest: skipped) with a
# message when clang or its libFuzzer is missing.
# Longer: fuzz/libfuzzer/run.sh view_index_fuzzer -runs=-1 -max_total_time=600
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
h=${1:?usage: fuzz/libfuzzer/run.sh HARNESS [libFuzzer flags...]}
shift
if ! ci/sanitize.sh --have-libfuzzer; then
  echo "SKIPPED: clang++ with libFuzzer is not installed (Debian: clang, libclang-rt-14-dev; ci/install_deps.sh installs them)"
  exit 77
fi
dir=${LOOM_LIBFUZZER_DIR:-build-libfuzzer}
ci/sanitize.sh --fuzzers "loom_$h" | tail -1
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
# A failing input is kept as $dir/fuzz/<harness>-crash-*; replay it with
# $dir/fuzz/loom_<harness> FILE.
artifacts=$PWD/$dir/fuzz/$h-
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Fixed seed and run count: a landing never depends on luck; the time limit
# only guards a slow machine.
exec "$dir/fuzz/loom_$h" -seed=20261122 -runs="${LOOM_LIBFUZZER_RUNS:-20000}" -max_total_time=120 \
  -max_len=256 -len_control=0 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts" "$@" "$corpus"
