// GEMM-shaped reductions. A kernel whose value sums a product of two float32
// operands, where past a common prefix of batch axes each output axis is read
// by one operand only, is a batch of matrix products
//   C[b][x][y] = sum_k A[b][x][k] * B[b][k][y]
// (a matmul, a linear layer, a convolution's forward and both backward passes
// over the windows the movement ops build). split_gemms cuts each such kernel
// doing at least gemm_min_macs() multiply-adds into
//   - a pack kernel per operand that is not already a strided matrix (a
//     convolution's windows, a fused prologue, a gradient read transposed)
//     unless the GEMM gathers it (set_gemm_gathers):
//     its values in a row-major scratch buffer, or a column-major one where
//     the GEMMs read either way and the buffer it reads runs longer so
//     (set_gemm_packs_transposed),
//   - one canonical GEMM kernel (its item carries its GemmShape), which the engine
//     runs as generated code or hands to the device's extern GEMM,
//   - an epilogue kernel, the rest of the original kernel reading the GEMM's
//     result, when the kernel computes more than the sum.
// Every element still sums its products in k order in generated code.
#pragma once
#include <optional>
#include <vector>

#include "schedule/gemm_shape.h"
#include "schedule/schedule.h"

namespace loom::schedule {

// Sets ScheduleItem::gemm on each item whose AST is a canonical GEMM (after
// the splitting passes: a split's GEMM item and an unsplit matmul alike).
void mark_gemms(Schedule &sched);

// Replaces each large GEMM-shaped item of `sched` by its pack, GEMM and
// epilogue items; their scratch buffers join `sched.transient`. Off under
// LOOM_NOOPT=1.
void split_gemms(Schedule &sched);

// The smallest batch * m * n * k split_gemms splits (LOOM_GEMM_MIN_MACS,
// default 2^22; m, n and k must be 8 or more too, except at 0, which splits
// every GEMM-shaped kernel: tests send small kernels down the path with it).
// Returns the previous value.
int64_t set_gemm_min_macs(int64_t macs);
int64_t gemm_min_macs();

// Whether a pack may store its matrices column-major: where the GEMMs read
// either orientation alike, on a library or as the C target's packed template
// (GEMM code lowered as loops, the CUDA target's float32 one, reads a
// column-major B slowly). The engine sets it from LOOM_EXTERN and the
// device's target (default: LOOM_EXTERN, or the CPU device). Returns the
// previous value.
bool set_gemm_packs_transposed(bool on);

// Which GEMMs read a B that is a view of a buffer but not a strided matrix
// (a convolution's windows) through its view (GemmOperand::view) instead of
// packing it first. Such a GEMM runs as the device's template, which gathers
// B as it loads it: the C target's packed template of float32 operands, or
// the CUDA target's tensor-core one of float16/bfloat16 operands (`halves`);
// a library reads only strided matrices. `which`: All where the template
// runs every GEMM, FewRows beside a library (the GEMMs whose pack would cost
// more than the library gains, those of few rows: the first layers of a
// convolutional net), Off where no template gathers. `batched`: only the
// GEMMs with a batch axis or a gathered A, beside a convolution library
// (cuDNN) whose convolutions, batched over images, and weight gradients it
// takes (the others then run as the template). Where the tensor-core
// template gathers every GEMM (All of halves), a half GEMM without batch
// axes whose B it gathers reads its A through its views too (a weight
// gradient's output gradient, permuted; a batched GEMM's A, the weights,
// packs). The engine sets it from LOOM_EXTERN and the device
// (default: on the CPU device FewRows of float32 operands, All with
// LOOM_EXTERN=0; on CUDA Off, batched GEMMs of halves beside cuDNN, All of
// halves with LOOM_EXTERN=0). Returns the previous rule.
enum class Gathers { Off, FewRows, All };
struct alignas(8) GatherRule {  // one 8-byte word: its std::atomic is lock-free, no libatomic call
  Gathers which = Gathers::Off;
  bool halves = false, batched = false;
  bool operator==(const GatherRule &) const = default;
};
GatherRule set_gemm_gathers(GatherRule rule);

}  // namespace loom::schedule
