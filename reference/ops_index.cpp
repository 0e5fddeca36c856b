// The reference op map's indexing, shaping, scan, order and statistics ops.
// Ops that return several tensors have one entry per output (sort_values,
// sort_indices, ...); split-like ops return the piece named by `piece`.
#include <algorithm>

#include "torch_ops.h"

namespace loom::reference {
namespace {

int64_t wrap(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

at::Tensor piece(const std::vector<at::Tensor> &parts, const Attrs &a) {
  const int64_t i = a.get_int("piece");
  if (i < 0 || i >= static_cast<int64_t>(parts.size()))
    throw std::runtime_error("reference: no piece " + std::to_string(i) + " of " + std::to_string(parts.size()));
  return parts[static_cast<size_t>(i)];
}

// torch's pad functions take (before, after) pairs from the last dim backwards.
std::vector<int64_t> torch_pad_order(const std::vector<int64_t> &flat) {
  std::vector<int64_t> out;
  for (size_t i = flat.size(); i >= 2; i -= 2) {
    out.push_back(flat[i - 2]);
    out.push_back(flat[i - 1]);
  }
  return out;
}

at::Tensor pad_mode(const at::Tensor &x, const Attrs &a) {
  const std::vector<int64_t> p = torch_pad_order(a.get_ints("pad"));
  const bool reflect = a.get_string("mode") == "reflect";
  switch (p.size()) {
    case 2: return reflect ? at::reflection_pad1d(x, p) : at::replication_pad1d(x, p);
    case 4: return reflect ? at::reflection_pad2d(x, p) : at::replication_pad2d(x, p);
    case 6: return reflect ? at::reflection_pad3d(x, p) : at::replication_pad3d(x, p);
    default: throw std::runtime_error("reference: pad_mode takes 1 to 3 (before, after) pairs");
  }
}

c10::OptionalIntArrayRef opt_dims(const Attrs &a, std::vector<int64_t> &hold) {
  hold = a.get_ints("dims", {});
  if (hold.empty()) return c10::nullopt;
  return c10::IntArrayRef(hold);
}

// torch's index list for inputs 1.. placed at the dims attr "dims" names (a
// bool mask covers its ndim dims), the dims between taken whole.
c10::List<c10::optional<at::Tensor>> index_list(const TorchArgs &x, const Attrs &a) {
  c10::List<c10::optional<at::Tensor>> idx;
  const std::vector<int64_t> &dims = a.get_ints("dims");
  int64_t at_dim = 0;
  for (size_t j = 0; j < dims.size(); j++) {
    for (; at_dim < dims[j]; at_dim++) idx.push_back(c10::nullopt);
    const at::Tensor &ix = x.at(1 + j);
    idx.push_back(ix);
    at_dim += ix.scalar_type() == at::kBool ? ix.dim() : 1;
  }
  return idx;
}

}  // namespace

void add_index_ops(OpMap &t) {
  // ---- indexing
  t["gather"] = [](const TorchArgs &x, const Attrs &a) { return at::gather(x.at(0), a.get_int("dim"), x.at(1)); };
  t["scatter"] = [](const TorchArgs &x, const Attrs &a) {
    return at::scatter(x.at(0), a.get_int("dim"), x.at(1), x.at(2));
  };
  t["scatter_add"] = [](const TorchArgs &x, const Attrs &a) {
    return at::scatter_add(x.at(0), a.get_int("dim"), x.at(1), x.at(2));
  };
  t["index_select"] = [](const TorchArgs &x, const Attrs &a) {
    return at::index_select(x.at(0), a.get_int("dim"), x.at(1));
  };
  t["index"] = [](const TorchArgs &x, const Attrs &a) {
    c10::List<c10::optional<at::Tensor>> idx;
    const int64_t d = wrap(a.get_int("dim"), x.at(0).dim());
    for (int64_t i = 0; i < d; i++) idx.push_back(c10::nullopt);
    idx.push_back(x.at(1));
    return x.at(0).index(idx);
  };
  // Lists of indices: inputs self, the index tensors, then (index_put) the
  // values; attr "dims" gives the dim each index tensor starts at.
  t["index_list"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).index(index_list(x, a)); };
  t["index_put"] = [](const TorchArgs &x, const Attrs &a) {
    return at::index_put(x.at(0), index_list(x, a), x.at(1 + a.get_ints("dims").size()), a.get_int("accumulate") != 0);
  };
  t["masked_fill"] = [](const TorchArgs &x, const Attrs &a) {
    return at::masked_fill(x.at(0), x.at(1), to_torch_scalar(a.get_scalar("value")));
  };
  // Through a contiguous copy (same values, gradient passed through): torch 1.13's
  // masked_select backward misplaces gradients of non-contiguous inputs, e.g.
  // arange(13.).as_strided((2, 3, 3), (1, 3, 1), 2) gets weight 2 where 1 is due.
  t["masked_select"] = [](const TorchArgs &x, const Attrs &) {
    return at::masked_select(x.at(0).contiguous(), x.at(1));
  };
  t["one_hot"] = [](const TorchArgs &x, const Attrs &a) { return at::one_hot(x.at(0), a.get_int("num_classes")); };

  // ---- shaping
  t["cat"] = [](const TorchArgs &x, const Attrs &a) { return at::cat(x, a.get_int("dim")); };
  t["stack"] = [](const TorchArgs &x, const Attrs &a) { return at::stack(x, a.get_int("dim")); };
  t["split"] = [](const TorchArgs &x, const Attrs &a) {
    if (a.has("sizes")) return piece(at::split_with_sizes(x.at(0), a.get_ints("sizes"), a.get_int("dim")), a);
    return piece(at::split(x.at(0), a.get_int("size"), a.get_int("dim")), a);
  };
  t["chunk"] = [](const TorchArgs &x, const Attrs &a) {
    return piece(at::chunk(x.at(0), a.get_int("chunks"), a.get_int("dim")), a);
  };
  t["unbind"] = [](const TorchArgs &x, const Attrs &a) { return piece(at::unbind(x.at(0), a.get_int("dim")), a); };
  t["repeat"] = [](const TorchArgs &x, const Attrs &a) { return x.at(0).repeat(a.get_ints("sizes")); };
  t["tile"] = [](const TorchArgs &x, const Attrs &a) { return at::tile(x.at(0), a.get_ints("sizes")); };
  t["roll"] = [](const TorchArgs &x, const Attrs &a) {
    return at::roll(x.at(0), a.get_ints("shifts"), a.get_ints("dims", {}));
  };
  t["tril"] = [](const TorchArgs &x, const Attrs &a) { return at::tril(x.at(0), a.get_int("k")); };
  t["triu"] = [](const TorchArgs &x, const Attrs &a) { return at::triu(x.at(0), a.get_int("k")); };
  t["squeeze"] = [](const TorchArgs &x, const Attrs &a) {
    if (!a.has("dims")) return at::squeeze(x.at(0));
    // One dim at a time, highest first, so earlier squeezes do not renumber later dims.
    std::vector<int64_t> dims;
    for (int64_t d : a.get_ints("dims")) dims.push_back(wrap(d, std::max<int64_t>(x.at(0).dim(), 1)));
    std::sort(dims.rbegin(), dims.rend());
    at::Tensor r = x.at(0);
    for (int64_t d : dims) r = at::squeeze(r, d);
    return r;
  };
  t["unsqueeze"] = [](const TorchArgs &x, const Attrs &a) { return at::unsqueeze(x.at(0), a.get_int("dim")); };
  t["flatten"] = [](const TorchArgs &x, const Attrs &a) {
    return at::flatten(x.at(0), a.get_int("start"), a.get_int("end"));
  };
  t["unflatten"] = [](const TorchArgs &x, const Attrs &a) {
    return at::unflatten(x.at(0), a.get_int("dim"), a.get_ints("sizes"));
  };
  t["unfold"] = [](const TorchArgs &x, const Attrs &a) {
    return x.at(0).unfold(a.get_int("dim"), a.get_int("size"), a.get_int("step"));
  };
  t["pad_mode"] = [](const TorchArgs &x, const Attrs &a) { return pad_mode(x.at(0), a); };

  // ---- scans and order
  t["cumsum"] = [](const TorchArgs &x, const Attrs &a) { return at::cumsum(x.at(0), a.get_int("dim")); };
  t["cumprod"] = [](const TorchArgs &x, const Attrs &a) { return at::cumprod(x.at(0), a.get_int("dim")); };
  // stable: loom's sort keeps ties in their original order.
  t["sort_values"] = [](const TorchArgs &x, const Attrs &a) {
    return std::get<0>(at::sort(x.at(0), true, a.get_int("dim"), a.get_bool("descending")));
  };
  t["sort_indices"] = [](const TorchArgs &x, const Attrs &a) {
    return std::get<1>(at::sort(x.at(0), true, a.get_int("dim"), a.get_bool("descending")));
  };
  t["argsort"] = t["sort_indices"];
  // torch leaves the order of tied elements unspecified, so which of them
  // topk picks (and its gradient reaches) is too; a stable sort cut to k has
  // the same values and picks ties as loom does, by position. torch's own
  // topk runs first (what it rejects, bool, the reference rejects too) and
  // its results, laid out as torch lays them out, take the stable picks.
  const auto stable_topk = [](const TorchArgs &x, const Attrs &a) {
    const at::Tensor &v = x.at(0);
    const auto [tv, ti] = at::topk(v.detach(), a.get_int("k"), a.get_int("dim"), a.get_bool("largest"), true);
    const int64_t dim = v.dim() == 0 ? 0 : a.get_int("dim");
    const auto [sv, si] = at::sort(v, true, dim, a.get_bool("largest"));
    const auto like = [&](const at::Tensor &layout, const at::Tensor &s) {  // differentiable copy
      return at::empty_strided(layout.sizes(), layout.strides(), layout.options())
          .copy_(v.dim() == 0 ? s : s.narrow(dim, 0, a.get_int("k")));
    };
    return std::make_tuple(like(tv, sv), like(ti, si), dim);
  };
  t["topk_values"] = [=](const TorchArgs &x, const Attrs &a) { return std::get<0>(stable_topk(x, a)); };
  // The indices are checked through the values they select; ties are picked
  // by the stable sort, as for topk_values, so the gradient through gather
  // reaches the same elements.
  t["topk_indices_gathered"] = [=](const TorchArgs &x, const Attrs &a) {
    const auto [values, indices, dim] = stable_topk(x, a);
    return at::gather(x.at(0), dim, indices);
  };
  t["max_dim_values"] = [](const TorchArgs &x, const Attrs &a) {
    return std::get<0>(at::max(x.at(0), a.get_int("dim"), a.get_bool("keepdim")));
  };
  t["max_dim_indices"] = [](const TorchArgs &x, const Attrs &a) {
    return std::get<1>(at::max(x.at(0), a.get_int("dim"), a.get_bool("keepdim")));
  };
  t["min_dim_values"] = [](const TorchArgs &x, const Attrs &a) {
    return std::get<0>(at::min(x.at(0), a.get_int("dim"), a.get_bool("keepdim")));
  };
  t["min_dim_indices"] = [](const TorchArgs &x, const Attrs &a) {
    return std::get<1>(at::min(x.at(0), a.get_int("dim"), a.get_bool("keepdim")));
  };

  // ---- statistics
  t["var"] = [](const TorchArgs &x, const Attrs &a) {
    std::vector<int64_t> hold;
    return at::var(x.at(0), opt_dims(a, hold), c10::optional<int64_t>(a.get_int("correction")), a.get_bool("keepdim"));
  };
  t["std"] = [](const TorchArgs &x, const Attrs &a) {
    std::vector<int64_t> hold;
    return at::std(x.at(0), opt_dims(a, hold), c10::optional<int64_t>(a.get_int("correction")), a.get_bool("keepdim"));
  };
  t["std_mean_std"] = [](const TorchArgs &x, const Attrs &a) {
    std::vector<int64_t> hold;
    return std::get<0>(at::std_mean(x.at(0), opt_dims(a, hold), c10::optional<int64_t>(a.get_int("correction")), a.get_bool("keepdim")));
  };
  t["std_mean_mean"] = [](const TorchArgs &x, const Attrs &a) {
    std::vector<int64_t> hold;
    return std::get<1>(at::std_mean(x.at(0), opt_dims(a, hold), c10::optional<int64_t>(a.get_int("correction")), a.get_bool("keepdim")));
  };
  t["cov"] = [](const TorchArgs &x, const Attrs &a) { return at::cov(x.at(0), a.get_int("correction")); };
}

}  // namespace loom::reference
