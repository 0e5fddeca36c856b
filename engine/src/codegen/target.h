// What a device's kernels may use: the codegen passes' parameters per target
// (the C target: the defaults; CUDA: renderer/cuda_renderer.h). Under
// LOOM_NOOPT=1 every optional pass is off whatever the target says.
#pragma once
#include <cstdint>

namespace loom::codegen {

// Which upcast lanes the vectorize pass packs into vector UOps.
enum class Vectors {
  None,    // none: every lane stays a scalar
  Memory,  // only loads and stores of 4 float32 (16 bytes) or half (8 bytes)
           // lanes at an index that is a multiple of 4 (a GPU's aligned
           // accesses); every operation runs per lane
  All,     // loads, stores and the float32 arithmetic (the C target's GCC
           // vector types)
};

struct Target {
  bool block = true;  // the block pass (CPU cache blocking)
  // The optimize pass. An elementwise kernel computes `group_bytes` of its
  // innermost axis per iteration (0: one element), leaving a tail where
  // that does not divide the axis when `group_tail`; a kernel with one
  // reduction computes a tile of outputs when `reduce_tiles`.
  int64_t group_bytes = 64;
  bool group_tail = true;
  bool reduce_tiles = true;
  bool beam = true;  // LOOM_BEAM may time other upcasts (the C target's candidates)
  Vectors vectors = Vectors::All;
  // The widest vector register (the CPU device's: runtime/cpu/cpu.h's
  // vector_bytes): vectors have at most vector_bytes / 4 float32 lanes.
  int64_t vector_bytes = 64;
  // Fused multiply-add instructions: a float32/float64 sum of products folds
  // each product with one rounding, as BLAS and torch's CPU GEMM and
  // convolution kernels do (codegen/mul_add.h). The defaults are AVX-512's.
  bool fma = true;
  // Float sums of 1024 terms or more add in two levels (codegen/lowerer.h).
  // kernel_spec lowers a GPU's grouped reduction again with one level: its
  // threads stride the terms, and their accumulators fold as a tree.
  bool two_level_sums = true;
  // Float32 sums along memory add in this many interleaved partials, one
  // vector accumulator (codegen/optimize.h's sum_lanes; 1: one running sum).
  // The same on every vector width, so the values are too.
  int64_t sum_lanes = 8;
  // A canonical float32 GEMM kernel (schedule/gemm_shape.h) becomes a
  // library kernel: the C target's template over packed panels of B and
  // register tiles of C (codegen/gemm_tiles.h), each element summed in the
  // lowered loop nest's order.
  bool packed_gemm = true;
  // A core's level-2 cache, in bytes: the template's panel of B takes at
  // most a quarter of it (codegen/gemm_tiles.h). The CPU device reads the
  // machine's; the default is 2 MiB.
  int64_t l2_bytes = int64_t{2} << 20;
  // A canonical float16/bfloat16 GEMM kernel (schedule/gemm_shape.h) becomes a
  // library kernel: the KernelSpec's `library` is the kernel's AST, rendered as
  // the target's matrix-multiply-accumulate instructions.
  bool tensor_cores = false;
  // A GPU target's launches (codegen/launch.h): threads per block (0: a CPU
  // target, whose kernels plan no launch), and when a reduction runs one
  // block per output: fewer outputs than group_max_outputs (or each output's
  // terms consecutive in memory, a row sum), every per-thread reduction nest
  // at least group_min_length long.
  int64_t block_threads = 0;
  int64_t group_max_outputs = 0;
  int64_t group_min_length = 0;
  // A Write adding into its output (scatter_add, index_add, index_put with
  // accumulate) runs its elements across threads, each adding with an atomic
  // instruction (float32, float64, int32, int64): codegen/atomic_writes.h.
  bool atomic_add = false;
};

}  // namespace loom::codegen
