// UOp: an immutable, interned node {op, dtype, src, arg}. Equal fields give
// the same object, so structural equality is pointer equality.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/dtype.h"
#include "shape/shape_tracker.h"
#include "uop/buffer.h"
#include "uop/ops.h"
#include "shape/pool.h"
#include "uop/src_list.h"

namespace loom::uop {

struct ReduceArg {
  Op op;                      // Add, Mul, Max or Min
  std::vector<int64_t> axes;  // ReduceAxis only
  bool operator==(const ReduceArg &) const = default;
};

// A Write's addressing: `view` maps value's coordinates to the base's storage
// (with coordinate `axis` taken from the index when axis >= 0); `acc` combines
// with what is there (Add, Or); none: a plain overwrite.
struct WriteArg {
  shape::ShapeTracker view;
  int64_t axis = -1;
  std::optional<Op> acc;
  bool operator==(const WriteArg &) const = default;
};

struct BufferArg {
  std::shared_ptr<Buffer> buffer;
  bool operator==(const BufferArg &o) const { return buffer == o.buffer; }
};

// A runtime scalar's value (DESIGN 13): the arg of a CONST whose kernels read
// it through a DEFINE_VAR bound at launch, so no kernel's source or key, and
// no schedule's key, holds the value. `f` for float dtypes, `i` for the others.
// `tag` (0: none) names a JIT's scalar input: a replay binds that input's
// value wherever a kernel reads a param of its tag (loom/jit.h).
struct Param {
  double f = 0;
  int64_t i = 0;
  int64_t tag = 0;
  bool operator==(const Param &o) const;  // by bits, as CONST's doubles
};

using Arg = std::variant<std::monostate, int64_t, double, std::string, shape::ShapeTracker, ReduceArg, WriteArg,
                         BufferArg, Param>;

// Allocates a node together with its reference count (std::allocate_shared),
// from the graph's pool; when the last reference goes, the node leaves the
// intern table before it is destroyed.
void unintern(const UOp *p);
template <typename T>
struct InternAlloc : shape::PoolAlloc<T> {
  InternAlloc() = default;
  template <typename U>
  InternAlloc(const InternAlloc<U> &) {}
  template <typename U>
  void destroy(U *p) {
    if constexpr (std::is_same_v<U, UOp>) unintern(p);
    p->~U();
  }
  template <typename U>
  bool operator==(const InternAlloc<U> &) const { return true; }
};

class UOp : public std::enable_shared_from_this<UOp> {
 public:
  static UOpRef make(Op op, DType dtype, SrcList src = {}, Arg arg = {});
  // make() with its sources given by address: the node equal to it is looked
  // for before anything is copied, and the sources are copied only into a new
  // node (a braced list of references copies each one twice, and an equal node
  // found would drop the copies again).
  static UOpRef make_ref(Op op, DType dtype, std::initializer_list<const UOpRef *> src, Arg arg = {});
  static UOpRef const_(DType dtype, double value);  // stored as int64 for non-float dtypes
  static UOpRef const_int(int64_t value, DType dtype = DType::Int64);
  // A runtime scalar (a CONST with a Param), the value converted as const_ converts it.
  static UOpRef param(DType dtype, double value, int64_t tag = 0);

  const Op op;
  const DType dtype;
  const SrcList src;
  const Arg arg;
  const size_t hash;
  const size_t arg_digest;  // arg_hash(arg), which the schedule cache's key reads for each node of a graph
  // The logical shape of a graph-level node, filled in once by shape_of:
  // owned (owns_shape, set by the thread that filled it in) or a source's.
  mutable std::atomic<const Shape *> shape_memo{nullptr};
  mutable bool owns_shape = false;
  // A non-VIEW node's row-major tracker over its shape, filled in once by tracker_of.
  mutable std::atomic<const shape::ShapeTracker *> tracker_memo{nullptr};
  // The buffer view an earlier realize computed this node into, set and read
  // by the scheduler under its lock (schedule/substitute.h): a later graph
  // that still holds the node reads the buffer. Released with the node.
  mutable UOpRef realized;

  UOpRef with_src(SrcList new_src) const;
  template <typename T>
  const T &arg_as() const {
    return std::get<T>(arg);
  }
  bool is_const() const { return op == Op::Const; }
  bool is_param() const { return op == Op::Const && std::holds_alternative<Param>(arg); }
  double const_value() const;  // Const only (a Param's value too)
  std::string str(int depth = 0) const;  // indented tree, for LOOM_DEBUG=4

  UOp(Op op, DType dtype, SrcList src, Arg arg, size_t hash, size_t arg_digest)
      : op(op), dtype(dtype), src(std::move(src)), arg(std::move(arg)), hash(hash), arg_digest(arg_digest) {}
  ~UOp() {
    if (owns_shape) shape::pool_delete(shape_memo.load(std::memory_order_relaxed));
    shape::pool_delete(tracker_memo.load(std::memory_order_relaxed));
  }
  UOp(const UOp &) = delete;
  UOp &operator=(const UOp &) = delete;
};

// Convenience builders for ALU nodes; dtype follows the first operand
// (comparisons give Bool).
UOpRef alu(Op op, const UOpRef &a);
UOpRef alu(Op op, const UOpRef &a, const UOpRef &b);
UOpRef where(const UOpRef &c, const UOpRef &a, const UOpRef &b);
// a * b + c rounded once (MULADD); the three of one dtype.
UOpRef mul_add(const UOpRef &a, const UOpRef &b, const UOpRef &c);
UOpRef operator+(const UOpRef &a, const UOpRef &b);
UOpRef operator*(const UOpRef &a, const UOpRef &b);
UOpRef operator+(const UOpRef &a, int64_t b);
UOpRef operator*(const UOpRef &a, int64_t b);

// A runtime scalar's value as the kernel's DEFINE_VAR of `dtype` reads it: the
// register type's bytes (float for the half types, rounded as their constants
// are), in the low bytes.
uint64_t param_bits(DType dtype, const Param &p);
// `value` as a Param of `dtype` (truncated for integer dtypes, as const_ does).
Param make_param(DType dtype, double value, int64_t tag = 0);

std::string arg_str(const Arg &arg);
size_t arg_hash(const Arg &arg);
// Doubles compare by bits so NaN constants intern and -0.0 stays distinct from 0.0.
bool arg_equal(const Arg &a, const Arg &b);
// Every node reachable from root, each after its sources, in a deterministic order.
std::vector<UOpRef> toposort(const UOpRef &root);
// The same order as pointers to the references the graph itself holds (root's
// first): valid while root lives, and adds no reference to any node.
// `expected`: about how many nodes the graph has, when the caller knows (a size hint).
std::vector<const UOpRef *> toposort_refs(const UOpRef &root, size_t expected = 0);

}  // namespace loom::uop
