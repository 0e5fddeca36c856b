#!/usr/bin/env bash
# The sanitizer run: AddressSanitizer (with LeakSanitizer) + UBSan, in
# its own build dir, so the main build's compiler and flags do not change.
#   ci/sanitize.sh                  g++ build in $LOOM_SANITIZE_DIR (build-asan,
#                                   -O0: half -O1's compile time),
#                                   then run the engine unit tests and every
#                                   op's forward (OpProperty) and backward
#                                   (GradProperty) conformance property with
#                                   RC_PARAMS max_success=$LOOM_SANITIZE_CASES
#                                   (default 4) instead of 100, the properties
#                                   with LOOM_NOOPT=1 (plain loop nests)
#   ci/sanitize.sh --build [TARGET..] only configure and build those (g++;
#                                   default: the sanitizer run's)
#   ci/sanitize.sh --fuzzers TARGET.. clang build of the libFuzzer harnesses
#                                   in $LOOM_LIBFUZZER_DIR (build-libfuzzer);
#                                   clang, since g++ has no libFuzzer, and not
#                                   for conformance: libtorch 1.13's headers do
#                                   not compile with clang 14 in C++20
#   ci/sanitize.sh --have-libfuzzer exit 0 when clang can link a libFuzzer binary
# Any sanitizer report fails the run (halt_on_error, no UBSan recovery).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
dir=${LOOM_SANITIZE_DIR:-build-asan}
export CCACHE_DIR=${CCACHE_DIR:-$root/.ccache}

have_libfuzzer() {
  command -v clang++ >/dev/null || return 1
  local tmp
  tmp=$(mktemp -d)
  printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }\n' >"$tmp/f.cpp"
  local ok=0
  clang++ -fsanitize=fuzzer,address,undefined "$tmp/f.cpp" -o "$tmp/f" 2>/dev/null || ok=1
  rm -rf "$tmp"
  return $ok
}

configure() {  # configure DIR OPT [cmake args...]; -g1: line tables for the reports
  local d=$1 opt=$2
  shift 2
  cmake -S . -B "$d" -G Ninja "$@" -DLOOM_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g1" >/dev/null
}

# What the sanitizer run needs.
targets=(loom_engine_tests loom_conformance loom_cache_child)

build() {  # -O0: the tests' checks need no optimizer, and it halves the build
  (($#)) || set -- "${targets[@]}"
  configure "$dir" -O0
  ninja -C "$dir" -j "$(nproc)" "$@"
}

fuzzers() {  # -O1: a bounded fuzz run does the same number of runs in less time
  local d=${LOOM_LIBFUZZER_DIR:-build-libfuzzer}
  configure "$d" -O1 -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
  ninja -C "$d" -j "$(nproc)" "$@"
}

case ${1:-} in
  --have-libfuzzer) have_libfuzzer; exit ;;
  --build) shift; build "$@"; exit ;;
  --fuzzers) shift; fuzzers "$@"; exit ;;
  "") ;;
  *) echo "usage: ci/sanitize.sh [--build [TARGET...] | --fuzzers TARGET... | --have-libfuzzer]" >&2; exit 2 ;;
esac

source ci/timing.sh
start=$SECONDS
timed "sanitizer build" build
echo "sanitize: built in $((SECONDS - start)) s"
# detect_leaks: LeakSanitizer; libtorch's own one-time allocations are
# suppressed by ci/lsan.supp (each entry names why).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:detect_odr_violation=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$root/ci/lsan.supp:print_suppressions=0
export RC_PARAMS="seed=20261122 max_success=${LOOM_SANITIZE_CASES:-4}"
# The two runs go side by side (each is one process, mostly on one core),
# each into its own log, shown when it ends.
engine_tests() { "$dir/engine/loom_engine_tests" --gtest_brief=1; }
# The properties run with the kernel optimizations off (LOOM_NOOPT=1): the
# main ctest run covers the optimized kernels, this one the plain loop nests,
# so every op's forward and backward is checked against libtorch in both.
properties() {
  LOOM_NOOPT=1 "$dir/conformance/loom_conformance" --gtest_brief=1 \
    --gtest_filter='Ops/OpProperty.*:Ops/GradProperty.*'
}
timed "sanitizer run: engine tests (beside the properties)" engine_tests >"$dir/engine-tests.log" 2>&1 &
engine=$!
timed "sanitizer run: properties (beside the engine tests)" properties >"$dir/properties.log" 2>&1 &
props=$!
status=0
wait "$engine" || status=1
cat "$dir/engine-tests.log"
wait "$props" || status=1
cat "$dir/properties.log"
echo "sanitize: wall time $((SECONDS - start)) s"
exit "$status"
