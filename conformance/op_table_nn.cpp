// Linear algebra, convolution, pools, normalization, activations, losses (loom/nn.h
// functions and the matmul/clamp methods). Inputs of different ranks get their
// shapes from shape_fn; attrs then read those shapes.
#include "loom/nn.h"
#include "op_table.h"

namespace loom::conformance {
namespace {

using Engine = std::function<Tensor(const std::vector<Tensor> &, const Attrs &)>;
using ShapeFn = std::function<std::vector<Shape>(const Shape &, Rng &)>;

OpEntry nn_entry(const std::string &name, const std::string &method, int arity, Engine f) {
  OpEntry e;
  e.name = e.ref_op = name;
  e.method = method;
  e.arity = arity;
  e.engine = std::move(f);
  e.dtypes = dtypes::floats;
  e.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  e.backward = true;
  return e;
}

int64_t pick(Rng &rng, int64_t lo, int64_t hi) { return rng.uniform(lo, hi); }
const Shape &in_shape(const CaseContext &c, size_t i) { return c.inputs.at(i).shape; }
nn::Pair2 pair(const Attrs &a, const std::string &k) { return {a.get_ints(k)[0], a.get_ints(k)[1]}; }
std::string reduction(Rng &rng) { return rng.pick(std::vector<std::string>{"none", "mean", "sum"}); }

// Constant tensors (class weights, running statistics) travel as attrs, so the
// gradient checks do not treat them as inputs: ints k meaning k / 4.
std::vector<int64_t> random_quarters(Rng &rng, int64_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(pick(rng, lo, hi));
  return v;
}
Tensor quarters(const Attrs &a, const std::string &k, DType dt) {
  std::vector<double> v;
  for (int64_t q : a.get_ints(k)) v.push_back(static_cast<double>(q) / 4);
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, dt);
}

// ---- linear algebra

ShapeFn matmul_shapes() {
  return [](const Shape &, Rng &rng) -> std::vector<Shape> {
    const int64_t n = pick(rng, 1, 4), k = pick(rng, rng.coin(0.1) ? 0 : 1, 4), m = pick(rng, 1, 4), b = pick(rng, 1, 3);
    switch (pick(rng, 0, 6)) {
      case 0: return {{k}, {k}};
      case 1: return {{n, k}, {k}};
      case 2: return {{k}, {k, m}};
      case 3: return {{n, k}, {k, m}};
      case 4: return {{b, n, k}, {k, m}};
      case 5: return {{b, 1, n, k}, {2, k, m}};
      default: return {{k}, {b, k, m}};
    }
  };
}

ShapeFn linear_shapes(bool bias) {
  return [bias](const Shape &, Rng &rng) {
    const int64_t in = pick(rng, 1, 4), out = pick(rng, 1, 4);
    Shape x;
    for (int64_t i = pick(rng, 0, 2); i > 0; --i) x.push_back(pick(rng, 1, 3));
    x.push_back(in);
    std::vector<Shape> s = {x, {out, in}};
    if (bias) s.push_back({out});
    return s;
  };
}

// ---- convolution and pooling

// (N, C, H, W), sometimes unbatched (C, H, W).
Shape image(Rng &rng, int64_t c) {
  Shape s = {pick(rng, 1, 2), c, pick(rng, 1, 6), pick(rng, 1, 6)};
  if (rng.coin(0.2)) s.erase(s.begin());
  return s;
}

ShapeFn conv_shapes(bool bias) {
  return [bias](const Shape &, Rng &rng) {
    const int64_t g = rng.coin(0.7) ? 1 : pick(rng, 2, 3), cg = pick(rng, 1, 2), og = pick(rng, 1, 2);
    std::vector<Shape> s = {image(rng, g * cg), {g * og, cg, pick(rng, 1, 3), pick(rng, 1, 3)}};
    if (bias) s.push_back({g * og});
    return s;
  };
}

Attrs conv_attrs(const CaseContext &c, Rng &rng) {
  const Shape &x = in_shape(c, 0), &w = in_shape(c, 1);
  Attrs a;
  a.set_int("groups", x[x.size() - 3] / w[1]);
  a.set_ints("stride", {pick(rng, 1, 2), pick(rng, 1, 2)});
  a.set_ints("dilation", rng.coin(0.7) ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{pick(rng, 1, 2), pick(rng, 1, 2)});
  const int64_t mode = pick(rng, 0, 5);
  if (mode == 0) {
    a.set_string("padding_mode", "valid");
  } else if (mode == 1) {
    a.set_string("padding_mode", "same").set_ints("stride", {1, 1});
  } else {
    a.set_ints("padding", {pick(rng, 0, 2), pick(rng, 0, 2)});
  }
  return a;
}

Tensor conv_engine(const std::vector<Tensor> &x, const Attrs &a) {
  std::optional<Tensor> bias;
  if (x.size() > 2) bias = x[2];
  nn::Padding2 pad = a.has("padding_mode") ? nn::Padding2(a.get_string("padding_mode").c_str()) : nn::Padding2(pair(a, "padding"));
  return nn::conv2d(x[0], x[1], bias, pair(a, "stride"), pad, pair(a, "dilation"), a.get_int("groups"));
}

ShapeFn image_shape() {
  return [](const Shape &, Rng &rng) { return std::vector<Shape>{image(rng, pick(rng, 1, 3))}; };
}

// torch's pooling output length along one dim (floor or ceil mode).
int64_t pool_out(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t num = n + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= n + p) --o;
  return o;
}

// Whether every window along one dim reads an input element: a dilated window
// can straddle the input, reading padding only, and torch's max_pool2d then
// records an index past the input (its backward writes out of bounds).
bool windows_read_input(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  for (int64_t i = 0, o = pool_out(n, k, s, p, d, ceil_mode); i < o; ++i) {
    bool reads = false;
    for (int64_t j = 0; j < k; ++j) reads = reads || (i * s - p + j * d >= 0 && i * s - p + j * d < n);
    if (!reads) return false;
  }
  return true;
}

// Attrs past the defaults are drawn often enough that each appears in a run;
// sometimes left out, so the engine's defaults are compared with torch's.
Attrs pool_attrs(const CaseContext &c, Rng &rng, bool max) {
  const Shape &x = in_shape(c, 0);
  const std::vector<int64_t> k = {pick(rng, 1, 3), pick(rng, 1, 3)};
  Attrs a;
  a.set_ints("kernel", k);
  std::vector<int64_t> s = k;
  if (rng.coin(0.7)) a.set_ints("stride", s = {pick(rng, 1, 3), pick(rng, 1, 3)});
  const std::vector<int64_t> p = {pick(rng, 0, k[0] / 2), pick(rng, 0, k[1] / 2)};
  a.set_ints("padding", p);
  const bool ceil_mode = rng.coin(0.4);
  if (ceil_mode || rng.coin()) a.set_bool("ceil_mode", ceil_mode);
  if (max && rng.coin(0.4)) {
    std::vector<int64_t> d = {pick(rng, 1, 3), pick(rng, 1, 3)};
    for (size_t i = 0; i < 2 && x.size() >= 2; ++i)
      if (!windows_read_input(x[x.size() - 2 + i], k[i], s[i], p[i], d[i], ceil_mode)) d[i] = 1;
    a.set_ints("dilation", d);
  }
  if (!max) {
    if (rng.coin(0.6)) a.set_bool("count_include_pad", rng.coin());
    if (rng.coin(0.25)) a.set_int("divisor_override", rng.pick(std::vector<int64_t>{1, 2, 3, 7, -2}));
  }
  return a;
}

std::optional<nn::Pair2> pool_stride(const Attrs &a) {
  if (a.has("stride")) return pair(a, "stride");
  return std::nullopt;
}

Tensor max_pool_engine(const std::vector<Tensor> &x, const Attrs &a) {
  const nn::Pair2 dilation = a.has("dilation") ? pair(a, "dilation") : nn::Pair2(1);
  return nn::max_pool2d(x[0], pair(a, "kernel"), pool_stride(a), pair(a, "padding"), dilation,
                        a.get_bool("ceil_mode", false));
}

Tensor avg_pool_engine(const std::vector<Tensor> &x, const Attrs &a) {
  return nn::avg_pool2d(x[0], pair(a, "kernel"), pool_stride(a), pair(a, "padding"), a.get_bool("ceil_mode", false),
                        a.get_bool("count_include_pad", true), a.opt_int("divisor_override"));
}

// ---- normalization

ShapeFn batch_norm_shapes() {
  return [](const Shape &, Rng &rng) {
    const int64_t c = pick(rng, 1, 3);
    Shape x = {pick(rng, 1, 3), c};
    for (int64_t i = pick(rng, 0, 2); i > 0; --i) x.push_back(pick(rng, 1, 3));
    return std::vector<Shape>{x, {c}, {c}};
  };
}

Attrs batch_norm_attrs(const CaseContext &c, Rng &rng) {
  const int64_t ch = in_shape(c, 0)[1];
  return Attrs()
      .set_ints("running_mean", random_quarters(rng, ch, -8, 8))
      .set_ints("running_var", random_quarters(rng, ch, 1, 12))
      .set_bool("training", rng.coin())
      .set_double("momentum", rng.pick(std::vector<double>{0.1, 0.5, 1.0, rng.real(0, 1)}))
      .set_double("eps", rng.pick(std::vector<double>{1e-5, 1e-3, 0.5}));
}

// max over channels of |x| * |weight| / sqrt(var + eps): the size of x * alpha
// in torch's y = x * alpha + beta (the batch's variance in training, the
// running one in evaluation).
double batch_norm_terms(const std::vector<HostTensor> &x, const Attrs &a) {
  const HostTensor &in = x[0];
  const int64_t c = in.shape[1], inner = in.numel() / std::max<int64_t>(1, in.shape[0] * c);
  std::vector<double> sum(static_cast<size_t>(c)), sq(static_cast<size_t>(c)), big(static_cast<size_t>(c));
  for (int64_t i = 0; i < in.numel(); ++i) {
    const auto ch = static_cast<size_t>(i / std::max<int64_t>(1, inner) % c);
    const double v = in.get(i);
    sum[ch] += v;
    sq[ch] += v * v;
    big[ch] = std::max(big[ch], std::fabs(v));
  }
  const double per_channel = static_cast<double>(in.numel()) / static_cast<double>(std::max<int64_t>(1, c));
  const std::vector<int64_t> running_var = a.get_ints("running_var");
  double m = 0;
  for (int64_t ch = 0; ch < c; ++ch) {
    const auto k = static_cast<size_t>(ch);
    const double mean = sum[k] / per_channel;
    const double var = a.get_bool("training") ? std::max(0.0, sq[k] / per_channel - mean * mean)
                                              : static_cast<double>(running_var[k]) / 4;
    m = std::max(m, big[k] * std::fabs(x[1].get(ch)) / std::sqrt(var + a.get_double("eps")));
  }
  return m;
}

// The running statistics are buffers the call updates in place (training).
Tensor batch_norm_engine(const std::vector<Tensor> &x, const Attrs &a, int result) {
  Tensor rm = quarters(a, "running_mean", x[0].dtype()), rv = quarters(a, "running_var", x[0].dtype());
  Tensor y = nn::batch_norm(x[0], rm, rv, x[1], x[2], a.get_bool("training"), a.get_double("momentum"), a.get_double("eps"));
  return result == 0 ? y : result == 1 ? rm : rv;
}

ShapeFn layer_norm_shapes() {
  return [](const Shape &, Rng &rng) {
    Shape x;
    for (int64_t i = pick(rng, 1, 4); i > 0; --i) x.push_back(pick(rng, 1, 4));
    const int64_t k = pick(rng, 1, static_cast<int64_t>(x.size()));
    const Shape norm(x.end() - k, x.end());
    return std::vector<Shape>{x, norm, norm};
  };
}

// ---- losses

// Class-index targets: (C) with (), (N, C) with (N), (N, C, d1, ...) with (N, d1, ...).
ShapeFn class_shapes() {
  return [](const Shape &, Rng &rng) {
    const int64_t c = pick(rng, 1, 4);
    Shape x = {c}, t = {};
    if (rng.coin(0.85)) {
      const int64_t n = pick(rng, rng.coin(0.1) ? 0 : 1, 4);
      x = {n, c};
      t = {n};
      for (int64_t i = rng.coin(0.3) ? pick(rng, 1, 2) : 0; i > 0; --i) {
        const int64_t d = pick(rng, 1, 3);
        x.push_back(d);
        t.push_back(d);
      }
    }
    return std::vector<Shape>{x, t};
  };
}

Attrs class_attrs(const CaseContext &c, Rng &rng, bool smoothing, bool weighted) {
  const Shape &x = in_shape(c, 0);
  const int64_t classes = x.size() == 1 ? x[0] : x[1];
  Attrs a;
  a.set_int("classes", classes).set_string("reduction", reduction(rng));
  a.set_int("ignore_index", rng.coin(0.7) ? -100 : pick(rng, 0, classes - 1));
  a.set_double("label_smoothing", smoothing && rng.coin() ? rng.real(0, 1) : 0.0);
  if (weighted) a.set_ints("weight", random_quarters(rng, classes, 1, 8));
  return a;
}

DomainFn class_domain() {
  return [](DType dt, int i, const Attrs &a) {
    if (i == 1) return Domain{0, static_cast<double>(a.get_int("classes") - 1)};
    return default_domain(dt);
  };
}

std::vector<DType> class_dtypes(DType dt) { return {dt, DType::Int64}; }

std::optional<Tensor> opt(const std::vector<Tensor> &x, size_t i) {
  if (i < x.size()) return x[i];
  return std::nullopt;
}

std::optional<Tensor> opt_attr(const Attrs &a, const std::string &k, DType dt) {
  if (!a.has(k)) return std::nullopt;
  return quarters(a, k, dt);
}

void add_losses(std::vector<OpEntry> &t) {
  for (int weighted = 0; weighted < 2; ++weighted) {
    OpEntry ce = nn_entry(weighted ? "cross_entropy_weighted" : "cross_entropy", "cross_entropy", 2,
                          [](const std::vector<Tensor> &x, const Attrs &a) {
                            return nn::cross_entropy(x[0], x[1], opt_attr(a, "weight", x[0].dtype()), a.get_string("reduction"),
                                                     a.get_double("label_smoothing"), a.get_int("ignore_index"));
                          });
    ce.shape_fn = class_shapes();
    ce.attrs = [weighted](const CaseContext &c, Rng &rng) { return class_attrs(c, rng, true, weighted); };
    ce.domain = class_domain();
    ce.input_dtypes = class_dtypes;
    ce.reduction = true;
    t.push_back(ce);

    OpEntry nll = nn_entry(weighted ? "nll_loss_weighted" : "nll_loss", "nll_loss", 2,
                           [](const std::vector<Tensor> &x, const Attrs &a) {
                             return nn::nll_loss(x[0], x[1], opt_attr(a, "weight", x[0].dtype()), a.get_string("reduction"),
                                                 a.get_int("ignore_index"));
                           });
    nll.shape_fn = ce.shape_fn;
    nll.attrs = [weighted](const CaseContext &c, Rng &rng) { return class_attrs(c, rng, false, weighted); };
    nll.domain = ce.domain;
    nll.input_dtypes = ce.input_dtypes;
    nll.reduction = true;
    t.push_back(nll);
  }

  // Class probabilities: a float target of the input's shape.
  OpEntry probs = nn_entry("cross_entropy_probs", "cross_entropy", 2, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::cross_entropy(x[0], x[1], std::nullopt, a.get_string("reduction"), a.get_double("label_smoothing"));
  });
  probs.ref_op = "cross_entropy";
  probs.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs()
        .set_string("reduction", reduction(rng))
        .set_int("ignore_index", -100)
        .set_double("label_smoothing", rng.coin() ? rng.real(0, 1) : 0.0);
  };
  probs.domain = [](DType dt, int i, const Attrs &) { return i == 1 ? Domain{0, 1} : default_domain(dt); };
  probs.reduction = true;
  t.push_back(probs);

  OpEntry mse = nn_entry("mse_loss", "mse_loss", 2, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::mse_loss(x[0], x[1], a.get_string("reduction"));
  });
  mse.attrs = [](const CaseContext &, Rng &rng) { return Attrs().set_string("reduction", reduction(rng)); };
  mse.reduction = true;
  t.push_back(mse);

  for (int weighted = 0; weighted < 2; ++weighted) {
    OpEntry bce = nn_entry(weighted ? "binary_cross_entropy_with_logits_weighted" : "binary_cross_entropy_with_logits",
                           "binary_cross_entropy_with_logits", 2,
                           [](const std::vector<Tensor> &x, const Attrs &a) {
                             const DType dt = x[0].dtype();
                             return nn::binary_cross_entropy_with_logits(x[0], x[1], opt_attr(a, "weight", dt),
                                                                         a.get_string("reduction"),
                                                                         opt_attr(a, "pos_weight", dt));
                           });
    // weight and pos_weight: one value per element of the last dim, broadcast.
    bce.attrs = [weighted](const CaseContext &c, Rng &rng) {
      Attrs a = Attrs().set_string("reduction", reduction(rng));
      if (!weighted) return a;
      const Shape &s = in_shape(c, 0);
      const int64_t last = s.empty() ? 1 : s.back();
      return a.set_ints("weight", random_quarters(rng, last, 1, 12)).set_ints("pos_weight", random_quarters(rng, last, 1, 12));
    };
    bce.domain = [](DType dt, int i, const Attrs &) { return i == 1 ? Domain{0, 1} : default_domain(dt); };
    bce.reduction = true;
    t.push_back(bce);
  }
}

// ---- activations

Attrs dim_attrs(const CaseContext &c, Rng &rng) {
  const int64_t r = std::max<int64_t>(static_cast<int64_t>(in_shape(c, 0).size()), 1);
  return Attrs().set_int("dim", pick(rng, -r, r - 1));
}

void add_activations(std::vector<OpEntry> &t) {
  OpEntry sm = nn_entry("softmax", "softmax", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::softmax(x[0], a.get_int("dim"));
  });
  sm.attrs = dim_attrs;
  sm.reduction = true;
  // torch runs no kernel on an empty input, which then takes every dtype; a
  // non-empty integer or bool input both reject.
  sm.dtypes = dtypes::all;
  t.push_back(sm);
  OpEntry lsm = sm;
  lsm.name = lsm.method = lsm.ref_op = "log_softmax";
  lsm.engine = [](const std::vector<Tensor> &x, const Attrs &a) { return nn::log_softmax(x[0], a.get_int("dim")); };
  t.push_back(lsm);

  t.push_back(nn_entry("silu", "silu", 1, [](const std::vector<Tensor> &x, const Attrs &) { return nn::silu(x[0]); }));

  OpEntry leaky = nn_entry("leaky_relu", "leaky_relu", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::leaky_relu(x[0], a.get_double("negative_slope"));
  });
  leaky.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs().set_double("negative_slope", rng.pick(std::vector<double>{0.01, 0.2, -0.5, rng.real(0, 1)}));
  };
  // Grid values so x == 0 (the kink) happens.
  leaky.domain = [](DType dt, int, const Attrs &) { return is_float(dt) ? Domain{-2, 2, 0.5} : default_domain(dt); };
  t.push_back(leaky);

  OpEntry elu = nn_entry("elu", "elu", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::elu(x[0], a.get_double("alpha"));
  });
  elu.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs().set_double("alpha", rng.pick(std::vector<double>{1.0, 0.5, 2.0}));
  };
  elu.domain = leaky.domain;
  t.push_back(elu);

  OpEntry softplus = nn_entry("softplus", "softplus", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::softplus(x[0], a.get_double("beta"), a.get_double("threshold"));
  });
  softplus.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs()
        .set_double("beta", rng.pick(std::vector<double>{1.0, 0.5, 2.0}))
        .set_double("threshold", rng.pick(std::vector<double>{20.0, 1.0, 3.0}));
  };
  t.push_back(softplus);

  OpEntry hardtanh = nn_entry("hardtanh", "hardtanh", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::hardtanh(x[0], a.get_double("min_val"), a.get_double("max_val"));
  });
  // Integers: torch truncates the bounds; uint8 takes them only where they
  // truncate to non-negative values (else both reject).
  hardtanh.dtypes = dtypes::no_bool;
  hardtanh.attrs = [](const CaseContext &c, Rng &rng) {
    const double lo = is_float(c.dtype) ? rng.pick(std::vector<double>{-1.0, -0.5, -2.0})
                                        : rng.pick(std::vector<double>{-2.5, -1.0, -0.5, 0.0, 1.5});
    const double width = is_float(c.dtype) ? rng.pick(std::vector<double>{0.0, 1.0, 2.0})
                                           : rng.pick(std::vector<double>{0.0, 1.0, 2.5});
    return Attrs().set_double("min_val", lo).set_double("max_val", lo + width);
  };
  hardtanh.domain = leaky.domain;  // values on the bounds
  t.push_back(hardtanh);

  OpEntry clamp = nn_entry("clamp", "clamp", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    std::optional<Scalar> lo, hi;
    if (a.has("min")) lo = a.get_scalar("min");
    if (a.has("max")) hi = a.get_scalar("max");
    return x[0].clamp(lo, hi);
  });
  // Bool: torch clamps in the bounds' dtype (int64 for int bounds, float32 for
  // float ones) and rejects bool bounds.
  clamp.dtypes = dtypes::all;
  clamp.attrs = [](const CaseContext &c, Rng &rng) {
    Attrs a;
    const int which = static_cast<int>(pick(rng, 0, 2));  // 0: both, 1: min only, 2: max only
    const Domain d{-2, 2, is_float(c.dtype) ? 0.5 : 1};
    const DType kind = rng.coin(0.2)                                ? DType::Float32
                       : c.dtype == DType::Bool && rng.coin(0.75) ? DType::Int64
                                                                  : c.dtype;
    if (which != 2) a.set_scalar("min", random_scalar_for(kind, d, rng));
    if (which != 1) a.set_scalar("max", random_scalar_for(kind, d, rng));
    return a;
  };
  clamp.domain = [](DType dt, int, const Attrs &) { return Domain{-3, 3, is_float(dt) ? 0.5 : 1}; };
  t.push_back(clamp);

  // Only p = 0 and p = 1 are comparable with torch; the keep rate is checked in errors_nn_test.
  OpEntry dropout = nn_entry("dropout", "dropout", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::dropout(x[0], a.get_double("p"), a.get_bool("training"));
  });
  // Integers and bool: torch returns the input (p = 0, eval) or multiplies it
  // by zero (p = 1); a p between raises.
  dropout.dtypes = dtypes::all;
  dropout.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs().set_double("p", rng.coin() ? 0.0 : 1.0).set_bool("training", rng.coin(0.8));
  };
  t.push_back(dropout);
}

}  // namespace

void add_nn_ops(std::vector<OpEntry> &t) {
  // Integer matmul, linear and conv2d accumulate in the integer type and wrap
  // as it wraps (int8 values up to 9 overflow in a sum of 4 products).
  OpEntry mm = nn_entry("matmul", "matmul", 2, [](const std::vector<Tensor> &x, const Attrs &) { return x[0].matmul(x[1]); });
  mm.dtypes = dtypes::no_bool;
  mm.shape_fn = matmul_shapes();
  mm.reduction = true;
  mm.reduced_per_output = [](const std::vector<HostTensor> &x) { return static_cast<double>(x[0].shape.back()); };
  mm.sum_of_products = true;
  t.push_back(mm);

  for (int bias = 0; bias < 2; ++bias) {
    OpEntry lin = nn_entry(bias ? "linear" : "linear_nobias", "linear", 2 + bias,
                           [](const std::vector<Tensor> &x, const Attrs &) { return nn::linear(x[0], x[1], opt(x, 2)); });
    lin.dtypes = dtypes::no_bool;
    lin.shape_fn = linear_shapes(bias);
    lin.reduction = true;
    lin.reduced_per_output = [](const std::vector<HostTensor> &x) { return static_cast<double>(x[0].shape.back()); };
    lin.sum_of_products = true;
    t.push_back(lin);

    OpEntry conv = nn_entry(bias ? "conv2d" : "conv2d_nobias", "conv2d", 2 + bias, conv_engine);
    conv.dtypes = dtypes::no_bool;
    conv.shape_fn = conv_shapes(bias);
    conv.attrs = conv_attrs;
    conv.reduction = true;
    // Per output: C/groups * kh * kw products, the weight's elements per output channel.
    conv.reduced_per_output = [](const std::vector<HostTensor> &x) {
      return static_cast<double>(x[1].numel()) / static_cast<double>(std::max<int64_t>(1, x[1].shape[0]));
    };
    conv.sum_of_products = true;
    t.push_back(conv);
  }

  OpEntry maxp = nn_entry("max_pool2d", "max_pool2d", 1, max_pool_engine);
  maxp.shape_fn = image_shape();
  maxp.attrs = [](const CaseContext &c, Rng &rng) { return pool_attrs(c, rng, true); };
  // A coarse grid, so windows hold ties and the first maximum must win.
  maxp.domain = [](DType, int, const Attrs &) { return Domain{-2, 2, 0.5}; };
  t.push_back(maxp);
  OpEntry avgp = nn_entry("avg_pool2d", "avg_pool2d", 1, avg_pool_engine);
  // int64: torch's kernel sums in int64 and divides toward zero.
  avgp.dtypes = {DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
  avgp.shape_fn = image_shape();
  avgp.attrs = [](const CaseContext &c, Rng &rng) { return pool_attrs(c, rng, false); };
  avgp.reduction = true;
  t.push_back(avgp);
  OpEntry adapt = nn_entry("adaptive_avg_pool2d", "adaptive_avg_pool2d", 1, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::adaptive_avg_pool2d(x[0], pair(a, "output_size"));
  });
  adapt.shape_fn = image_shape();
  adapt.attrs = [](const CaseContext &c, Rng &rng) {
    const Shape &s = in_shape(c, 0);
    return Attrs().set_ints("output_size", {pick(rng, 1, s[s.size() - 2] + 1), pick(rng, 1, s[s.size() - 1] + 1)});
  };
  adapt.reduction = true;
  t.push_back(adapt);

  const char *bn_names[] = {"batch_norm", "batch_norm_running_mean", "batch_norm_running_var"};
  for (int result = 0; result < 3; ++result) {
    OpEntry bn = nn_entry(bn_names[result], "batch_norm", 3, [result](const std::vector<Tensor> &x, const Attrs &a) {
      return batch_norm_engine(x, a, result);
    });
    bn.shape_fn = batch_norm_shapes();
    bn.attrs = batch_norm_attrs;
    bn.reduction = true;
    bn.backward = result == 0;  // the running statistics are buffers
    if (result == 0) bn.cancelled_terms = batch_norm_terms;
    t.push_back(bn);
  }

  OpEntry ln = nn_entry("layer_norm", "layer_norm", 3, [](const std::vector<Tensor> &x, const Attrs &a) {
    return nn::layer_norm(x[0], a.get_ints("normalized_shape"), x[1], x[2], a.get_double("eps"));
  });
  ln.shape_fn = layer_norm_shapes();
  ln.attrs = [](const CaseContext &c, Rng &rng) {
    return Attrs()
        .set_ints("normalized_shape", in_shape(c, 1))
        .set_double("eps", rng.pick(std::vector<double>{1e-5, 1e-3, 0.5}));
  };
  ln.reduction = true;
  t.push_back(ln);

  add_activations(t);
  add_losses(t);
}

}  // namespace loom::conformance
