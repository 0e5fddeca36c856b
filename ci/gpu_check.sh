#!/usr/bin/env bash
# ci/gpu_check.sh [CARRY_DIR]
# The whole GPU check, one command, on a machine with an NVIDIA GPU and a
# pip-installed PyTorch (python3 with torch, numpy, pytest, pybind11, cmake and
# ninja; no apt). Run from anywhere in the checkout; CARRY_DIR (default
# .gpu-carry) is what ci/gpu_carry.sh gathered on a Debian machine: GoogleTest
# and RapidCheck, and the upstream hlb-CIFAR10 main.py. It
#   1. builds loom, its engine tests, the conformance sweep with the machine's
#      torch as the oracle (reference/CMakeLists.txt: LOOM_TORCH_PYTHON), and
#      the Python module (build-gpu/)
#   2. runs at once, on the GPU: the engine tests; the conformance sweep, every
#      op forward and backward, every dtype, on the contiguous, permuted and
#      strided layouts; the Python tests
#   3. then alone: bench/gpu_table.py (with cuBLAS, LOOM_EXTERN's default, then
#      the rows it changes with loom's own kernels); the JIT's tests and the
#      hlb-like step under the JIT (loom-bench-jit) with its replays as CUDA
#      graphs (LOOM_GRAPHS=1) and, for the step, without; and the upstream
#      hlb-CIFAR10 under PyTorch and under loom (bench/hlb_upstream.py)
# and prints one summary. Each phase runs under a time limit (the seconds
# below); its whole output is in build-gpu/gpu-check/<phase>.log. Exits
# non-zero when a phase failed or ran past its limit.
#
# LOOM_GPU_CHECK_DEVICE=CUDA_EMULATOR runs the same steps on a machine without
# a GPU (the CUDA kernels on the CPU; the tables small, on the CPU): a check of
# this script, not of a GPU. PYTHON names the Python (default python3);
# LOOM_GPU_CHECK_PHASES, the phases after the build (default: engine sweep
# python gpu_table generated graphs hlb profile).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
carry=$(realpath "${1:-.gpu-carry}")
py=$(command -v "${PYTHON:-python3}")
device=${LOOM_GPU_CHECK_DEVICE:-CUDA}
build=$(realpath -m "${LOOM_BUILD_DIR:-build-gpu}")
logs=$build/gpu-check
jobs=$(nproc)
shards=$(((jobs + 1) / 2))
sweep_layouts=contiguous,permuted,strided
phases=${LOOM_GPU_CHECK_PHASES:-engine sweep python gpu_table generated graphs hlb profile}  # fewer: a rerun of some
start=$SECONDS
export root carry py device build logs jobs shards  # for the phases run by a shell of their own
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/*.result

# phase NAME LIMIT_S CMD...: CMD under a time limit, its output in NAME.log,
# its exit status and seconds in NAME.result.
phase() {
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  echo "gpu_check: $name (at most ${limit} s)"
  if declare -F "$1" >/dev/null; then  # a function of this script: a shell that knows it
    timeout -k 10 "$limit" bash -o pipefail -c "$(declare -f "$1"); $*" >"$logs/$name.log" 2>&1
  else
    timeout -k 10 "$limit" "$@" >"$logs/$name.log" 2>&1
  fi
  rc=$?
  echo "$rc $((SECONDS - t0))" >"$logs/$name.result"
  return "$rc"
}

# gtest_shards NAME LIMIT_S BINARY ARGS...: the binary in $shards processes at
# once (gtest's own sharding), each its own log NAME.<i>.log.
gtest_shards() {
  local name=$1 limit=$2 t0=$SECONDS rc=0 i
  shift 2
  local pids=()
  echo "gpu_check: $name, $shards processes (at most ${limit} s)"
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout -k 10 "$limit" "$@" >"$logs/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  echo "$rc $((SECONDS - t0))" >"$logs/$name.result"
  return "$rc"
}

export LOOM_DEVICE=$device
# NVRTC (and cuBLAS) from the toolkit, where the loader does not know it
[[ -d /usr/local/cuda/lib64 ]] && export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$build/python
export RC_PARAMS=${RC_PARAMS:-seed=20261122}
export PYTHONUNBUFFERED=1

{
  echo "gpu_check: $(git rev-parse --short HEAD 2>/dev/null || echo '?') on $(uname -m), $jobs cores, LOOM_DEVICE=$device"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "$py" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.is_available())"
  command -v nvcc >/dev/null && nvcc --version | tail -1
  c++ --version | head -1
} | tee "$logs/machine.log"

pybind11_dir=$("$py" -c "import pybind11; print(pybind11.get_cmake_dir())" 2>/dev/null || true)
export pybind11_dir
build_cmd() {
  local gen=Ninja
  command -v ninja >/dev/null || gen="Unix Makefiles"
  cmake -S "$root" -B "$build" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DLOOM_TEST_FLAGS=-O1 \
    -DLOOM_TORCH_PYTHON="$py" -DPython_EXECUTABLE="$py" ${pybind11_dir:+-Dpybind11_DIR="$pybind11_dir"} \
    -DCMAKE_PREFIX_PATH="$carry/prefix" &&
    cmake --build "$build" -j "$jobs" --target loom_engine_tests loom_cache_child loom_conformance_sweep \
      loom_python loom_python_package loom-bench-jit
}
phase build 150 build_cmd || tail -40 "$logs/build.log"

want() { [[ " $phases " == *" $1 "* ]]; }
if [[ -f $logs/build.result && $(cut -d' ' -f1 "$logs/build.result") == 0 ]]; then
  # The tests, all at once: they share the GPU and the kernel cache.
  want engine && gtest_shards engine 150 "$build/engine/loom_engine_tests" --gtest_brief=1 &
  want sweep && LOOM_SWEEP_LAYOUTS=$sweep_layouts gtest_shards sweep 150 \
    "$build/conformance/loom_conformance_sweep" --gtest_brief=1 --gtest_filter="${LOOM_GPU_CHECK_SWEEP:-Ops/OpSweep.*}" &
  # -v: a line per test as it ends, so that a run stopped at its limit still
  # names its failures.
  pytest_args=(-v -p no:cacheprovider -p no:warnings --tb=short -rfE)
  "$py" -c "import pytest_timeout" 2>/dev/null && pytest_args+=(--timeout 120)
  # Each file in a pytest of its own, $shards at once, where ctest runs them:
  # a process that imported the shim prints its tensors as torch's.
  pytests() {
    cd "$build/python" || return 1
    local f
    for f in "$root"/python/tests/test_*.py; do
      while (($(jobs -rp | wc -l) >= shards)); do wait -n; done
      "$py" -m pytest "$@" "$f" >"$logs/python.$(basename "$f" .py).log" 2>&1 &
    done
    wait
    ! grep -qE '^(FAILED|ERROR) ' "$logs"/python.test_*.log
  }
  want python && phase python 220 pytests "${pytest_args[@]}" &
  wait
  table=(--runs 3)
  [[ $device == CUDA ]] || table=(--device cpu --small --runs 1)
  want gpu_table && phase gpu_table 80 "$py" bench/gpu_table.py "${table[@]}"
  want generated && LOOM_EXTERN=0 phase generated 50 "$py" bench/gpu_table.py "${table[@]}" \
    matmul1024 matmul2048 conv_fwd conv_fwdbwd hlb1024h
  # The JIT with its replays as CUDA graphs: its tests, then the step's
  # replays with graphs and without, with cuBLAS (each call between two
  # graphs) and with loom's own GEMMs (the step one graph).
  graphs() {
    local batch=256 e g
    [[ $device == CUDA ]] || batch=4
    LOOM_GRAPHS=1 "$build/engine/loom_engine_tests" --gtest_brief=1 --gtest_filter='Jit.*' || return 1
    for e in 1 0; do
      for g in 1 0; do
        echo "LOOM_EXTERN=$e LOOM_GRAPHS=$g"
        LOOM_EXTERN=$e LOOM_GRAPHS=$g "$build/bench/loom-bench-jit" "$batch" 6 || return 1
      done
    done
  }
  want graphs && phase graphs 120 graphs
  hlb() {
    local data=$logs/hlb-data
    "$py" examples/hlb_cifar10/make_synthetic.py "$data" --train 10240 --test 2500 &&
      if [[ $device == CUDA ]]; then
        "$py" bench/hlb_upstream.py "$carry/main.py" --data "$data"
      else
        "$py" bench/hlb_upstream.py "$carry/main.py" --data "$data" --epochs 2 --batch 256 --width 16
      fi
  }
  want hlb && [[ -f $carry/main.py ]] && phase hlb 60 hlb
  # Where the hlb-like step's kernel time goes: each kernel waited for and timed.
  profile() {
    local args=(--runs 1 hlb1024h)
    [[ $device == CUDA ]] || args=(--device cpu --small --runs 1 hlb64)
    LOOM_DEBUG=2 "$py" bench/gpu_table.py "${args[@]}" >"$logs/profile-debug.log" 2>&1 &&
      "$py" bench/kernel_profile.py "$logs/profile-debug.log"
  }
  want profile && phase profile 40 profile
fi

# The summary: one line per phase.
gtest_counts() {  # the passed, failed and skipped tests over NAME's shard logs
  cat "$logs/$1".*.log 2>/dev/null | awk '
    /^\[  PASSED  \] [0-9]+ test/ {p += $4} /^\[  SKIPPED \] [0-9]+ test/ {s += $4}
    /^\[  FAILED  \] [A-Za-z].* \([0-9]+ ms\)$/ {f++}
    END {printf "%d passed, %d failed, %d skipped", p, f, s}'
}
pytest_counts() {  # over the files' logs: each test's -v line (also where a file was stopped)
  cat "$logs"/python.test_*.log 2>/dev/null | grep -oE ' (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) +\[ *[0-9]+%\]$' |
    awk '{k[$1]++} END {printf "%d passed, %d failed, %d errors, %d skipped", k["PASSED"], k["FAILED"], k["ERROR"], k["SKIPPED"]}'
}
status() {  # "ok", "FAILED (rc N)", "TIMED OUT" or "not run", and the seconds
  [[ -f $logs/$1.result ]] || { echo "not run"; return; }
  read -r rc secs <"$logs/$1.result"
  case $rc in
    0) echo "ok, ${secs} s" ;;
    124 | 137) echo "TIMED OUT after ${secs} s" ;;
    *) echo "FAILED (rc $rc), ${secs} s" ;;
  esac
}
{
  echo
  echo "## gpu_check summary: $(head -1 "$logs/machine.log" | cut -d' ' -f2-)"
  sed -n 2,5p "$logs/machine.log" | sed 's/^/  /'
  echo "build: $(status build)"
  [[ $(status build) == ok* ]] || grep -E 'error|Error' "$logs/build.log" | head -20
  echo "engine tests (LOOM_DEVICE=$device, $shards shards): $(status engine); $(gtest_counts engine)"
  echo "conformance sweep ($sweep_layouts, every dtype, forward and backward): $(status sweep); $(gtest_counts sweep)"
  echo "python tests: $(status python); $(pytest_counts)"
  echo "gpu_table: $(status gpu_table)"
  grep '^|' "$logs/gpu_table.log" 2>/dev/null
  echo "gpu_table with loom's own GEMM kernels (LOOM_EXTERN=0): $(status generated)"
  grep '^|' "$logs/generated.log" 2>/dev/null | tail -n +3
  echo "JIT replays as CUDA graphs: $(status graphs)"
  grep -E '^(LOOM_EXTERN|median of steps|\[  (PASSED|FAILED) )' "$logs/graphs.log" 2>/dev/null
  echo "hlb upstream: $(status hlb)"
  grep -E '^(hlb_upstream|torch|loom)' "$logs/hlb.log" 2>/dev/null
  echo "kernel profile of one hlb-like step (LOOM_DEBUG=2): $(status profile)"
  head -16 "$logs/profile.log" 2>/dev/null
  echo "failed tests:"
  cat "$logs"/engine.*.log "$logs"/sweep.*.log 2>/dev/null | grep -oE '^\[  FAILED  \] [A-Za-z][^ ,]*' | cut -c14- | sort -u | head -40
  cat "$logs"/python.test_*.log 2>/dev/null | grep -E '^(FAILED|ERROR) ' | cut -d' ' -f1,2 | sort -u | head -40
  echo "gpu_check: wall time $((SECONDS - start)) s"
} | tee "$logs/summary.txt"

for p in build $phases; do
  [[ -f $logs/$p.result && $(cut -d' ' -f1 "$logs/$p.result") != 0 ]] && exit 1
done
exit 0
