#!/usr/bin/env bash
# Sourced by ci/test.sh. Debian 12's OpenBLAS (0.3.21) picks its kernels by
# CPU model, and on a model newer than it knows (an Intel Xeon of family 6,
# model 207, say) it falls back to its generic Prescott (SSE3) kernels, for
# libtorch and for loom's extern GEMM alike: 3-4x slower GEMMs, and a
# rounding that differs from the AVX2/AVX-512 kernels' enough for the
# differential training check against real torch to drift past its
# tolerance after a dozen steps. Where that happens (and OPENBLAS_CORETYPE is
# unset), name the kernels for the CPU's instruction set instead.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  openblas_core=$(/usr/bin/python3 -c 'import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())' 2>/dev/null || true)
  if [[ $openblas_core == Prescott ]]; then
    if grep -qw avx512f /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=Haswell
    fi
    echo "test.sh: OpenBLAS did not recognize this CPU (it chose Prescott): OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
  fi
fi
