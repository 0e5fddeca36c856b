#include "layouts.h"

#include <numeric>
#include <stdexcept>

namespace loom::conformance {

using reference::Attrs;
using reference::ViewStep;

const char *layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Permuted: return "permuted";
    case Layout::Strided: return "strided";
    case Layout::Negative: return "negative";
    case Layout::Broadcast: return "broadcast";
    case Layout::Offset: return "offset";
    case Layout::Windows: return "windows";
    case Layout::ChannelsLast: return "channels_last";
  }
  return "?";
}

std::string LayoutInput::str() const {
  std::string s = std::string(layout_name(layout)) + ": " + shape_str(view.shape) + " strides " +
                  shape_str(view.strides) + " offset " + std::to_string(view.offset) + " storage " +
                  std::to_string(view.storage_numel()) + "; engine: from_host" + shape_str(base.shape);
  for (const ViewStep &st : steps) s += "." + st.str();
  return s;
}

namespace {

HostTensor contiguous_base(DType dt, const Shape &shape) {
  HostTensor h;
  h.dtype = dt;
  h.shape = shape;
  h.strides = row_major_strides(shape);
  h.storage = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(shape_numel(shape)) * itemsize(dt));
  return h;
}

HostTensor view_of(const HostTensor &base, const Shape &shape, std::vector<int64_t> strides, int64_t offset) {
  HostTensor v = base;  // shares the storage
  v.shape = shape;
  v.strides = std::move(strides);
  v.offset = offset;
  return v;
}

void plan_permuted(LayoutInput &in, const Shape &s, DType dt, Rng &rng) {
  const size_t r = s.size();
  std::vector<int64_t> order(r);
  std::iota(order.begin(), order.end(), 0);
  if (r >= 2) {
    while (std::is_sorted(order.begin(), order.end())) rng.shuffle(order);
  }
  Shape base_shape(r);
  for (size_t i = 0; i < r; ++i) base_shape[order[i]] = s[i];
  in.base = contiguous_base(dt, base_shape);
  std::vector<int64_t> st(r);
  for (size_t i = 0; i < r; ++i) st[i] = in.base.strides[order[i]];
  if (r >= 2) in.steps.push_back({"permute", Attrs().set_ints("order", order)});
  in.view = view_of(in.base, s, st, 0);
}

void plan_strided(LayoutInput &in, const Shape &s, DType dt, Rng &rng) {
  const size_t r = s.size();
  std::vector<int64_t> step(r), start(r);
  Shape base_shape(r);
  for (size_t d = 0; d < r; ++d) {
    step[d] = rng.uniform(2, 3);
    start[d] = rng.uniform(0, 1);
    base_shape[d] = s[d] == 0 ? 2 : start[d] + (s[d] - 1) * step[d] + 1 + rng.uniform(0, 1);
  }
  in.base = contiguous_base(dt, base_shape);
  std::vector<int64_t> st(r);
  int64_t offset = 0;
  for (size_t d = 0; d < r; ++d) {
    const int64_t stop = start[d] + (s[d] == 0 ? 0 : (s[d] - 1) * step[d] + 1);
    in.steps.push_back({"slice", Attrs()
                                     .set_int("dim", static_cast<int64_t>(d))
                                     .set_int("start", start[d])
                                     .set_int("stop", stop)
                                     .set_int("step", step[d])});
    st[d] = in.base.strides[d] * step[d];
    offset += start[d] * in.base.strides[d];
  }
  in.view = view_of(in.base, s, st, offset);
}

void plan_negative(LayoutInput &in, const Shape &s, DType dt, Rng &rng) {
  const size_t r = s.size();
  // Per dim: 0 = as is, 1 = flip, 2 = slice with step -2. At least one reversed dim.
  std::vector<int> how(r);
  for (size_t d = 0; d < r; ++d) how[d] = static_cast<int>(rng.uniform(0, 2));
  if (r && std::all_of(how.begin(), how.end(), [](int h) { return h == 0; })) how[rng.uniform(0, r - 1)] = 1;
  Shape base_shape = s;
  for (size_t d = 0; d < r; ++d)
    if (how[d] == 2 && s[d] > 0) base_shape[d] = 2 * s[d] - rng.uniform(0, 1);
  in.base = contiguous_base(dt, base_shape);
  std::vector<int64_t> st = in.base.strides, flips;
  int64_t offset = 0;
  for (size_t d = 0; d < r; ++d) {
    if (how[d] == 0) continue;
    offset += std::max<int64_t>(base_shape[d] - 1, 0) * in.base.strides[d];
    st[d] = -in.base.strides[d] * (how[d] == 2 ? 2 : 1);
    if (how[d] == 1) flips.push_back(static_cast<int64_t>(d));
    else in.steps.push_back({"slice", Attrs().set_int("dim", static_cast<int64_t>(d)).set_int("step", -2)});
  }
  if (!flips.empty()) in.steps.insert(in.steps.begin(), {"flip", Attrs().set_ints("dims", flips)});
  in.view = view_of(in.base, s, st, offset);
}

void plan_broadcast(LayoutInput &in, const Shape &s, DType dt, Rng &rng) {
  const size_t r = s.size();
  std::vector<bool> bcast(r);
  for (size_t d = 0; d < r; ++d) bcast[d] = rng.coin(0.5);
  if (r && std::none_of(bcast.begin(), bcast.end(), [](bool b) { return b; })) bcast[rng.uniform(0, r - 1)] = true;
  // Leading broadcast dims may be missing from the base altogether (expand prepends them).
  size_t dropped = 0;
  while (dropped < r && bcast[dropped] && rng.coin(0.5)) ++dropped;
  Shape base_shape;
  for (size_t d = dropped; d < r; ++d) base_shape.push_back(bcast[d] ? 1 : s[d]);
  in.base = contiguous_base(dt, base_shape);
  std::vector<int64_t> st(r, 0);
  for (size_t d = dropped; d < r; ++d) st[d] = bcast[d] ? 0 : in.base.strides[d - dropped];
  if (r) in.steps.push_back({"expand", Attrs().set_ints("shape", s)});
  in.view = view_of(in.base, s, st, 0);
}

void plan_offset(LayoutInput &in, const Shape &s, DType dt, Rng &rng) {
  const int64_t n = shape_numel(s), k = rng.uniform(1, 5);
  in.base = contiguous_base(dt, {k + n + rng.uniform(0, 3)});
  in.steps.push_back({"shrink", Attrs().set_ints("bounds", {k, k + n})});
  in.steps.push_back({"reshape", Attrs().set_ints("shape", s)});
  in.view = view_of(in.base, s, row_major_strides(s), k);
}

void plan_windows(LayoutInput &in, const Shape &s, DType dt, Rng &rng) {
  const size_t r = s.size();
  // Innermost stride 1, outer strides at most the natural one: rows overlap.
  std::vector<int64_t> st(r);
  int64_t natural = 1;
  for (size_t d = r; d-- > 0;) {
    st[d] = d + 1 == r ? 1 : rng.uniform(1, std::max<int64_t>(natural, 1));
    natural = st[d] * std::max<int64_t>(s[d], 1);
  }
  const int64_t k = rng.uniform(0, 3);
  int64_t extent = 0;
  for (size_t d = 0; d < r; ++d) extent += std::max<int64_t>(s[d] - 1, 0) * st[d];
  in.base = contiguous_base(dt, {k + extent + 1 + rng.uniform(0, 2)});
  in.steps.push_back({"as_strided", Attrs().set_ints("size", s).set_ints("stride", st).set_int("offset", k)});
  in.view = view_of(in.base, s, st, k);
}

void plan_channels_last(LayoutInput &in, const Shape &s, DType dt) {
  const size_t r = s.size();
  if (r < 2) {
    in.base = contiguous_base(dt, s);
    in.view = in.base;
    return;
  }
  // View dim 1 lives innermost in the base: base = (s0, s2, ..., s_{r-1}, s1).
  std::vector<int64_t> order(r);  // view dim i <- base dim order[i]
  order[0] = 0;
  order[1] = static_cast<int64_t>(r) - 1;
  for (size_t i = 2; i < r; ++i) order[i] = static_cast<int64_t>(i) - 1;
  Shape base_shape(r);
  for (size_t i = 0; i < r; ++i) base_shape[order[i]] = s[i];
  in.base = contiguous_base(dt, base_shape);
  std::vector<int64_t> st(r);
  for (size_t i = 0; i < r; ++i) st[i] = in.base.strides[order[i]];
  in.steps.push_back({"permute", Attrs().set_ints("order", order)});
  in.view = view_of(in.base, s, st, 0);
}

std::vector<std::pair<int64_t, int64_t>> pairs(const std::vector<int64_t> &flat) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
  return out;
}

}  // namespace

LayoutInput plan_layout(Layout layout, const Shape &shape, DType dtype, Rng &rng) {
  LayoutInput in;
  in.layout = layout;
  switch (layout) {
    case Layout::Contiguous:
      in.base = contiguous_base(dtype, shape);
      in.view = in.base;
      break;
    case Layout::Permuted: plan_permuted(in, shape, dtype, rng); break;
    case Layout::Strided: plan_strided(in, shape, dtype, rng); break;
    case Layout::Negative: plan_negative(in, shape, dtype, rng); break;
    case Layout::Broadcast: plan_broadcast(in, shape, dtype, rng); break;
    case Layout::Offset: plan_offset(in, shape, dtype, rng); break;
    case Layout::Windows: plan_windows(in, shape, dtype, rng); break;
    case Layout::ChannelsLast: plan_channels_last(in, shape, dtype); break;
  }
  return in;
}

Tensor build_engine(const LayoutInput &in) {
  Tensor t = Tensor::from_host(in.base);
  for (const ViewStep &s : in.steps) t = apply_step(t, s);
  return t;
}

Tensor apply_step(const Tensor &t, const ViewStep &step) {
  const Attrs &a = step.attrs;
  const std::string &op = step.op;
  if (op == "reshape") return t.reshape(a.get_ints("shape"));
  if (op == "permute") return t.permute(a.get_ints("order"));
  if (op == "expand") return t.expand(a.get_ints("shape"));
  if (op == "pad") return t.pad(pairs(a.get_ints("pad")), a.has("value") ? a.get_scalar("value") : Scalar(0));
  if (op == "shrink") return t.shrink(pairs(a.get_ints("bounds")));
  if (op == "flip") return t.flip(a.get_ints("dims"));
  if (op == "slice") return t.slice(a.get_int("dim"), a.opt_int("start"), a.opt_int("stop"), a.get_int("step"));
  if (op == "as_strided") return t.as_strided(a.get_ints("size"), a.get_ints("stride"), a.opt_int("offset"));
  if (op == "transpose") return t.transpose(a.get_int("dim0"), a.get_int("dim1"));
  if (op == "contiguous") return t.contiguous();
  throw std::invalid_argument("apply_step: not a movement op: " + op);
}

}  // namespace loom::conformance
