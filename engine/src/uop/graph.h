// UOp-graph helpers: shapes of graph nodes and view construction (views over
// views compose into one VIEW node). Shared by the Tensor ops and the scheduler.
#pragma once
#include <functional>
#include <unordered_map>

#include "uop/uop.h"

namespace loom::uop {

// Logical shape of a graph-level node.
const Shape &shape_of(const UOpRef &u);
// VIEW over base_of(x); st is the whole tracker from the base (callers
// extend tracker_of(x)), so a view of a view stays one VIEW node.
UOpRef view(const UOpRef &x, shape::ShapeTracker st);
// The node's current tracker: a VIEW's own, else the identity over its shape.
const shape::ShapeTracker &tracker_of(const UOpRef &u);
// The node a view chain starts from (the node itself if it is not a VIEW).
const UOpRef &base_of(const UOpRef &u);
// The first non-VIEW node below a chain of VIEWs (nested VIEWs mark copy points).
const UOpRef &root_of(const UOpRef &u);
// Marks where torch would have copied (flip, pad, a reshape that is not a
// view): later views are views of this value, which matters only to
// as_strided. Nothing is copied: the marker is an identity VIEW over the VIEW.
UOpRef copy_point(const UOpRef &u);
// The BUFFER node when u is a whole buffer read row-major (the buffer itself,
// or a contiguous view covering all of it); nullptr otherwise.
const UOp *whole_buffer(const UOp *u);
// `u` rebuilt with each node for which `leaf` gives a replacement replaced
// (a replaced node's sources are not visited); a node with nothing replaced
// below it stays itself. `memo` maps nodes already rebuilt.
UOpRef replace_nodes(const UOpRef &u, const std::function<UOpRef(const UOpRef &)> &leaf,
                     std::unordered_map<const UOp *, UOpRef> &memo);
// A constant broadcast to `shape`.
UOpRef const_tensor(double value, DType dtype, const Shape &shape);
// A number from outside the graph's structure (a scalar operand, an alpha=,
// an optimizer's lr): a runtime scalar (UOp::param) broadcast to `shape`,
// except 0, 1 and -1, which stay constants that fold (x * 1, x + 0, -x).
UOpRef scalar_tensor(double value, DType dtype, const Shape &shape);
// A runtime scalar broadcast to `shape`, whatever its value (a JIT's scalar
// input, tagged: UOp::param).
UOpRef param_tensor(double value, DType dtype, const Shape &shape, int64_t tag = 0);
// An integer constant exactly (int64 values past 2^53 do not survive a double).
UOpRef const_int_tensor(int64_t value, DType dtype, const Shape &shape);
// Realized buffer viewed as `shape` (row-major).
UOpRef buffer_view(const std::shared_ptr<uop::Buffer> &buf, const Shape &shape);
// The same, given the shape's row-major tracker (ShapeTracker::from_shape).
UOpRef buffer_view(const std::shared_ptr<uop::Buffer> &buf, const shape::ShapeTracker &row_major);
// Whether `u` is the node buffer_view(buf, shape) gives, without building it.
bool is_buffer_view(const UOpRef &u, const Buffer &buf, const Shape &shape);

}  // namespace loom::uop
