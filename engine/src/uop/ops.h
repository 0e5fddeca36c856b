// The UOp operation set. Graph ops describe lazy tensors; kernel ops describe
// one kernel after scheduling; ALU ops appear in both.
#pragma once
#include <cstdint>

namespace loom::uop {

enum class Op : uint8_t {
  // ---- graph level
  Buffer,      // no src; arg BufferArg; logical shape (size,)
  Const,       // no src; arg int64_t (bool/int dtypes) or double (floats); 0-d. Or arg Param: a
               // runtime scalar (DESIGN 13), whose value a kernel reads through a DEFINE_VAR
  View,        // src[0] = x; arg ShapeTracker mapping x's shape to the view's shape
  Contiguous,  // src[0] = x; x must be realized into its own buffer
  ReduceAxis,  // src[0] = x; arg ReduceArg{Add|Mul|Max|Min, axes}; reduced dims keep size 1
  Cast,        // src[0] = x; dtype = target (bool: x != 0)
  Gather,      // src = {x, index (int64, the result's shape)}; arg int64 axis: result[p] = x[p with
               // p[axis] = index[p]]; x's other dims equal the result's; an index outside
               // [0, x.shape[axis]) reads 0 (the Tensor ops check index values first)
  Scan,        // src[0] = x; arg ReduceArg{Add|Mul, {axis}}: result[p] = the fold of x over the positions q
               // with q[axis] <= p[axis] (q = p elsewhere). In a kernel: src = {value, Range} with
               // ReduceArg{op, {}}: the running fold over the Range, an output loop opened innermost.
  Sort,        // src[0] = x (row-major); arg ReduceArg{Min (ascending) | Max (descending), {axis}}; int64:
               // per line along axis, the positions that sort it stably (NaN largest). A library kernel.
  Write,       // src = {base, value[, index (int64, value's shape)]}; arg WriteArg: base with elements
               // overwritten (or combined with arg.acc) in value's row-major order; value[p] goes to
               // the storage position arg.view addresses for p, with p[arg.axis] = index[p] when
               // there is an index. Realized as a copy of base, then O(value) stores into it.
  Sink,        // src = everything to realize; dtype Bool (unused)
  // ---- kernel level
  DefineGlobal,  // no src; arg int64_t slot; dtype = element dtype of the buffer
  DefineVar,     // no src; arg int64_t slot; a runtime scalar of the kernel (a CONST's Param),
                 // its value bound at launch: the kernel's key never holds the value
  Range,         // src[0] = end (int64 Const); arg int64_t id; the loop variable, 0 <= r < end
  Load,          // src = {DefineGlobal, index[, valid]}: invalid reads give 0
  Store,         // src = {DefineGlobal, index, value[, gate]}; in an AST: {DefineGlobal, value[, index]} with
                 // arg ShapeTracker (row-major output) or WriteArg (a Write's stores)
  Reduce,        // src = {value, Range...}; arg ReduceArg{op, {}}: folds value over the ranges
  // ---- linearized program only (codegen's last pass): a kernel as a list of UOps
  EndRange,      // src = {Range}: closes the loop the Range opened (a Range in the list opens it)
  DefineAcc,     // src = {Reduce | Scan}: declares its accumulator, set to the fold's identity; the
                 // Reduce or Scan itself in the list is the accumulate step
  // ---- vector values (codegen's vectorize pass): a kernel-level Load, Store, Cast or ALU
  // UOp with an int64_t arg of n > 1 computes n lanes (a Load or Store: n consecutive
  // elements from its index), and a Reduce folds n lanes when its value does
  Vectorize,     // src = the lanes' scalar values, in lane order
  Gep,           // src[0] = a vector value; arg int64_t lane: that lane's scalar value
  // ---- ALU: unary
  Neg, Abs, Exp, Log, Sqrt, Recip, Sin, Cos, Tanh, Erf, Not, Floor,
  // ---- ALU: binary
  Add, Sub, Mul, Div,  // Div: true division for floats
  IDiv, Mod,           // C truncating division and remainder (fmod for floats)
  Max, Min, Pow,
  CmpLt, CmpLe, CmpEq, CmpNe,  // dtype Bool
  And, Or, Xor,                // logical on Bool, bitwise on ints
  Shl, Shr,                    // ints: left shift (wraps), arithmetic right shift; counts outside [0, 63] give 0 (or -1)
  // ---- ALU: ternary
  Where,  // src = {cond (Bool), a, b}
};

const char *op_name(Op op);
// A kernel's leaves that are no computation: a constant, a runtime scalar, a buffer.
inline bool is_kernel_leaf(Op op) { return op == Op::Const || op == Op::DefineVar || op == Op::DefineGlobal; }
bool is_alu(Op op);
bool is_commutative(Op op);
bool is_comparison(Op op);

}  // namespace loom::uop
