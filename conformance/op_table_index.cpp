// Indexing, shaping, scans, sorting and statistics. Ops returning several
// tensors have one entry per output; split-like ops compare the piece named by
// the `piece` attr. Index inputs draw their values from [0, n) (or [-n, n) for
// index), with n carried in the attrs.
#include <algorithm>

#include "op_table.h"

namespace loom::conformance {
namespace {

int64_t rank_of(const CaseContext &c, size_t input = 0) { return static_cast<int64_t>(c.inputs[input].shape.size()); }

// A dim of a rank-r tensor, sometimes written negatively (0-d: 0 or -1).
int64_t random_dim(Rng &rng, int64_t r) {
  const int64_t n = std::max<int64_t>(r, 1);
  const int64_t d = rng.uniform(0, n - 1);
  return rng.coin(0.3) ? d - n : d;
}

int64_t wrapped(int64_t d, int64_t r) { return d < 0 ? d + std::max<int64_t>(r, 1) : d; }

// Size of dim d of input i (1 for a 0-d input).
int64_t size_at(const CaseContext &c, int64_t d, size_t i = 0) {
  const Shape &s = c.inputs[i].shape;
  return s.empty() ? 1 : s[static_cast<size_t>(wrapped(d, static_cast<int64_t>(s.size())))];
}

Tensor pick(const std::vector<Tensor> &parts, const Attrs &a) {
  const int64_t i = a.get_int("piece");
  if (i < 0 || i >= static_cast<int64_t>(parts.size()))
    throw Error("no piece " + std::to_string(i) + " among " + std::to_string(parts.size()));
  return parts[static_cast<size_t>(i)];
}

OpEntry entry(const std::string &name, const std::string &method, EngineFn f, std::vector<DType> dts = dtypes::all) {
  OpEntry e;
  e.name = e.ref_op = name;
  e.method = method;
  e.engine = std::move(f);
  e.dtypes = std::move(dts);
  e.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  return e;
}

// Ties on purpose: order ops must break them like torch.
Domain tie_domain(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (dt == DType::UInt8) return {0, 4};
  return {-3, 3, 1};
}

// Input 1 is an index into a dim of size attrs.n; the rest use `other`.
DomainFn index_domain(bool negative, Domain (*other)(DType) = default_domain) {
  return [negative, other](DType dt, int input, const Attrs &a) {
    if (input != 1) return other(dt);
    const double n = static_cast<double>(a.get_int("n"));
    return Domain{negative ? -n : 0, n - 1};
  };
}

// An index shape no larger than s in any dim (sometimes empty).
Shape smaller(const Shape &s, Rng &rng) {
  Shape out = s;
  for (int64_t &d : out) d = rng.uniform(std::min<int64_t>(d, 1), d);
  return out;
}

Attrs dim_attrs(const CaseContext &c, Rng &rng) {
  const int64_t d = random_dim(rng, rank_of(c));
  return Attrs().set_int("dim", d).set_int("n", size_at(c, d));
}

void add_indexing(std::vector<OpEntry> &t) {
  using namespace dtypes;
  OpEntry g = entry("gather", "gather", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].gather(a.get_int("dim"), x[1]);
  });
  g.arity = 2;
  g.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Int64}; };
  g.shape_fn = [](const Shape &s, Rng &rng) { return std::vector<Shape>{s, smaller(s, rng)}; };
  g.attrs = dim_attrs;
  g.domain = index_domain(false);
  g.backward = true;
  t.push_back(g);

  // scatter: the index has at most one element along dim, so no target is written twice.
  OpEntry sc = entry("scatter", "scatter", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].scatter(a.get_int("dim"), x[1], x[2]);
  });
  sc.arity = 3;
  sc.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Int64, dt}; };
  sc.shape_fn = [](const Shape &s, Rng &rng) {
    Shape ix = smaller(s, rng);
    if (!ix.empty()) {
      int64_t &k = ix[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(ix.size()) - 1))];
      k = std::min<int64_t>(k, 1);
    }
    // src has the index's shape: torch's backward cannot handle a larger src.
    return std::vector<Shape>{s, ix, ix};
  };
  sc.attrs = [](const CaseContext &c, Rng &rng) {
    const Shape &ix = c.inputs[1].shape;
    std::vector<int64_t> ok;
    for (size_t d = 0; d < ix.size(); d++)
      if (ix[d] <= 1) ok.push_back(static_cast<int64_t>(d));
    int64_t d = ok.empty() ? 0 : rng.pick(ok);
    if (rng.coin(0.3)) d -= std::max<int64_t>(static_cast<int64_t>(ix.size()), 1);
    return Attrs().set_int("dim", d).set_int("n", size_at(c, d));
  };
  sc.domain = index_domain(false);
  sc.backward = true;
  t.push_back(sc);

  OpEntry sa = sc;
  sa.name = sa.ref_op = sa.method = "scatter_add";
  sa.engine = [](const std::vector<Tensor> &x, const Attrs &a) { return x[0].scatter_add(a.get_int("dim"), x[1], x[2]); };
  sa.shape_fn = [](const Shape &s, Rng &rng) {
    const Shape ix = smaller(s, rng);
    return std::vector<Shape>{s, ix, ix};
  };
  sa.attrs = dim_attrs;
  t.push_back(sa);

  OpEntry is = entry("index_select", "index_select", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].index_select(a.get_int("dim"), x[1]);
  });
  is.arity = 2;
  is.input_dtypes = g.input_dtypes;
  is.shape_fn = [](const Shape &s, Rng &rng) {
    // A 0-d self becomes (1,): torch's index_select backward rejects 0-d inputs.
    return std::vector<Shape>{s.empty() ? Shape{1} : s, rng.coin(0.2) ? Shape{} : Shape{rng.uniform(0, 4)}};
  };
  is.attrs = dim_attrs;
  is.domain = index_domain(false);
  is.backward = true;
  t.push_back(is);

  OpEntry ix = entry("index", "index", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].index(a.get_int("dim"), x[1]);
  });
  ix.arity = 2;
  ix.input_dtypes = g.input_dtypes;
  ix.shape_fn = [](const Shape &s, Rng &rng) {
    Shape i(static_cast<size_t>(rng.uniform(0, 2)));
    for (int64_t &d : i) d = rng.uniform(0, 3);
    return std::vector<Shape>{s, i};
  };
  ix.attrs = dim_attrs;
  ix.domain = index_domain(true);
  ix.backward = true;
  ix.max_numel = 32;
  t.push_back(ix);

  // Boolean-mask indexing: a bool mask over dims [dim, dim + mask.ndim()).
  OpEntry im = ix;
  im.name = "index_mask";
  im.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Bool}; };
  im.shape_fn = [](const Shape &s, Rng &rng) {
    const auto r = static_cast<int64_t>(s.size());
    // No 0-d masks: at::index rejects them (Python's indexing treats them itself).
    if (r == 0) return std::vector<Shape>{s, Shape{1}};
    const int64_t d = rng.uniform(0, r - 1), k = rng.uniform(1, r - d);
    return std::vector<Shape>{s, Shape(s.begin() + d, s.begin() + d + k)};
  };
  im.attrs = [](const CaseContext &c, Rng &rng) {
    const Shape &s = c.inputs[0].shape, &m = c.inputs[1].shape;
    const auto r = static_cast<int64_t>(s.size()), k = static_cast<int64_t>(m.size());
    std::vector<int64_t> ok;  // every dim the mask's shape fits at
    for (int64_t d = 0; d < std::max<int64_t>(r, 1) && d + k <= r; ++d)
      if (std::equal(m.begin(), m.end(), s.begin() + d)) ok.push_back(d);
    int64_t d = ok.empty() ? 0 : rng.pick(ok);
    if (rng.coin(0.3)) d -= std::max<int64_t>(r, 1);
    return Attrs().set_int("dim", d);
  };
  im.domain = [](DType dt, int, const Attrs &) { return default_domain(dt); };
  t.push_back(im);

  OpEntry mf = entry("masked_fill", "masked_fill", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].masked_fill(x[1], a.get_scalar("value"));
  });
  mf.arity = 2;
  // Broadcasting shapes, but a bool mask always (shape_fn keeps the property from
  // mixing dtypes: torch 1.13 misreads floating masks instead of rejecting them).
  mf.shape_fn = [](const Shape &s, Rng &rng) {
    std::vector<Shape> out(2, s);
    for (Shape &o : out) {
      if (rng.coin(0.3)) o.erase(o.begin(), o.begin() + rng.uniform(0, static_cast<int64_t>(o.size())));
      for (int64_t &d : o)
        if (rng.coin(0.3)) d = 1;
    }
    return out;
  };
  mf.input_dtypes = [](DType dt) { return std::vector<DType>{dt, DType::Bool}; };
  mf.attrs = [](const CaseContext &c, Rng &rng) {
    return Attrs().set_scalar("value", random_scalar_for(c.dtype, default_domain(c.dtype), rng));
  };
  mf.backward = true;
  t.push_back(mf);

  OpEntry ms = entry("masked_select", "masked_select", [](const std::vector<Tensor> &x, const Attrs &) {
    return x[0].masked_select(x[1]);
  });
  ms.arity = 2;
  ms.shapes = ShapeKind::Broadcast;
  ms.input_dtypes = mf.input_dtypes;
  ms.backward = true;  // the reference reads a contiguous copy (see ops_index.cpp)
  t.push_back(ms);

  OpEntry oh = entry("one_hot", "one_hot", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].one_hot(a.get_int("num_classes"));
  }, {DType::Int64});
  oh.attrs = [](const CaseContext &, Rng &rng) {
    return Attrs().set_int("num_classes", rng.coin(0.3) ? -1 : rng.uniform(1, 5));
  };
  oh.domain = [](DType, int, const Attrs &a) {
    const int64_t c = a.get_int("num_classes");
    return Domain{0, static_cast<double>(c == -1 ? 4 : c - 1)};
  };
  oh.max_numel = 32;
  t.push_back(oh);
}

// A piece index among `count` pieces (-1 when there are none: both sides reject).
int64_t random_piece(Rng &rng, int64_t count) { return count == 0 ? -1 : rng.uniform(0, count - 1); }

void add_shaping(std::vector<OpEntry> &t) {
  // cat: three inputs that differ only along one dim.
  OpEntry cat = entry("cat", "cat", [](const std::vector<Tensor> &x, const Attrs &a) {
    return Tensor::cat(x, a.get_int("dim"));
  });
  cat.arity = 3;
  cat.shape_fn = [](const Shape &s, Rng &rng) {
    std::vector<Shape> out(3, s);
    if (s.empty()) return out;
    const size_t d = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(s.size()) - 1));
    for (Shape &o : out) o[d] = rng.uniform(0, 3);
    return out;
  };
  cat.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t r = rank_of(c);
    int64_t d = random_dim(rng, r);
    for (int64_t k = 0; k < r; k++)
      if (c.inputs[0].shape[k] != c.inputs[1].shape[k] || c.inputs[0].shape[k] != c.inputs[2].shape[k])
        d = rng.coin(0.3) ? k - r : k;
    return Attrs().set_int("dim", d);
  };
  cat.max_numel = 24;
  cat.backward = true;
  t.push_back(cat);

  OpEntry stack = entry("stack", "stack", [](const std::vector<Tensor> &x, const Attrs &a) {
    return Tensor::stack(x, a.get_int("dim"));
  });
  stack.arity = 3;
  stack.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t r = rank_of(c) + 1;
    return Attrs().set_int("dim", rng.uniform(-r, r - 1));
  };
  stack.max_numel = 24;
  stack.backward = true;
  t.push_back(stack);

  OpEntry split = entry("split", "split", [](const std::vector<Tensor> &x, const Attrs &a) {
    if (a.has("sizes")) return pick(x[0].split(a.get_ints("sizes"), a.get_int("dim")), a);
    return pick(x[0].split(a.get_int("size"), a.get_int("dim")), a);
  });
  split.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t d = random_dim(rng, rank_of(c)), n = size_at(c, d);
    Attrs a;
    a.set_int("dim", d);
    int64_t count;
    if (rng.coin()) {
      std::vector<int64_t> sizes;
      int64_t left = n;
      while (left > 0 && sizes.size() < 3) {
        sizes.push_back(rng.uniform(0, left));
        left -= sizes.back();
      }
      sizes.push_back(left);
      rng.shuffle(sizes);
      a.set_ints("sizes", sizes);
      count = static_cast<int64_t>(sizes.size());
    } else {
      const int64_t size = n == 0 ? rng.uniform(0, 2) : rng.uniform(1, n + 1);
      a.set_int("size", size);
      count = size == 0 ? 1 : std::max<int64_t>((n + size - 1) / size, 1);
    }
    return a.set_int("piece", random_piece(rng, count));
  };
  split.backward = true;
  t.push_back(split);

  OpEntry chunk = entry("chunk", "chunk", [](const std::vector<Tensor> &x, const Attrs &a) {
    return pick(x[0].chunk(a.get_int("chunks"), a.get_int("dim")), a);
  });
  chunk.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t d = random_dim(rng, rank_of(c)), n = size_at(c, d), k = rng.uniform(1, 4);
    const int64_t size = (n + k - 1) / k;
    const int64_t count = n == 0 ? k : (n + size - 1) / size;
    return Attrs().set_int("dim", d).set_int("chunks", k).set_int("piece", random_piece(rng, count));
  };
  chunk.backward = true;
  t.push_back(chunk);

  OpEntry unbind = entry("unbind", "unbind", [](const std::vector<Tensor> &x, const Attrs &a) {
    return pick(x[0].unbind(a.get_int("dim")), a);
  });
  unbind.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t d = random_dim(rng, rank_of(c));
    return Attrs().set_int("dim", d).set_int("piece", random_piece(rng, size_at(c, d)));
  };
  unbind.backward = true;
  t.push_back(unbind);

  OpEntry squeeze = entry("squeeze", "squeeze", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].squeeze(a.get_ints("dims", {}));
  });
  squeeze.attrs = [](const CaseContext &c, Rng &rng) {
    Attrs a;
    if (rng.coin(0.3)) return a;
    const int64_t r = rank_of(c);
    std::vector<int64_t> dims{random_dim(rng, r)};
    const int64_t other = random_dim(rng, r);
    if (r > 1 && rng.coin(0.3) && wrapped(other, r) != wrapped(dims[0], r)) dims.push_back(other);
    return a.set_ints("dims", dims);
  };
  squeeze.backward = true;
  t.push_back(squeeze);

  OpEntry unsqueeze = entry("unsqueeze", "unsqueeze", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].unsqueeze(a.get_int("dim"));
  });
  unsqueeze.attrs = stack.attrs;
  unsqueeze.backward = true;
  t.push_back(unsqueeze);

  OpEntry flatten = entry("flatten", "flatten", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].flatten(a.get_int("start"), a.get_int("end"));
  });
  flatten.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t r = rank_of(c);
    int64_t s = random_dim(rng, r), e = random_dim(rng, r);
    if (wrapped(s, r) > wrapped(e, r) && rng.coin(0.8)) std::swap(s, e);
    return Attrs().set_int("start", s).set_int("end", e);
  };
  flatten.backward = true;
  t.push_back(flatten);

  OpEntry unflatten = entry("unflatten", "unflatten", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].unflatten(a.get_int("dim"), a.get_ints("sizes"));
  });
  unflatten.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t d = random_dim(rng, rank_of(c)), n = size_at(c, d);
    std::vector<int64_t> divisors;
    for (int64_t f = 1; f <= n; f++)
      if (n % f == 0) divisors.push_back(f);
    std::vector<int64_t> sizes;
    if (n == 0) {
      sizes = {0, rng.uniform(1, 3)};
    } else {
      const int64_t f = rng.pick(divisors);
      sizes = {f, n / f};
      if (rng.coin(0.3)) sizes[static_cast<size_t>(rng.uniform(0, 1))] = -1;
    }
    if (rng.coin(0.3)) rng.shuffle(sizes);
    return Attrs().set_int("dim", d).set_ints("sizes", sizes);
  };
  unflatten.backward = true;
  t.push_back(unflatten);

  auto repeat_attrs = [](int64_t extra_lo) {
    return [extra_lo](const CaseContext &c, Rng &rng) {
      const int64_t len = std::max<int64_t>(rank_of(c) + rng.uniform(extra_lo, 1), 0);
      std::vector<int64_t> sizes(static_cast<size_t>(len));
      for (int64_t &s : sizes) s = rng.uniform(0, 2);
      return Attrs().set_ints("sizes", sizes);
    };
  };
  OpEntry repeat = entry("repeat", "repeat", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].repeat(a.get_ints("sizes"));
  });
  repeat.attrs = repeat_attrs(0);
  repeat.max_numel = 12;
  repeat.backward = true;
  t.push_back(repeat);
  OpEntry tile = entry("tile", "tile", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].tile(a.get_ints("sizes"));
  });
  tile.attrs = repeat_attrs(-2);
  tile.max_numel = 12;
  tile.backward = true;
  t.push_back(tile);

  OpEntry roll = entry("roll", "roll", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].roll(a.get_ints("shifts"), a.get_ints("dims", {}));
  });
  roll.attrs = [](const CaseContext &c, Rng &rng) {
    Attrs a;
    const int64_t r = rank_of(c);
    if (r == 0 || rng.coin(0.3)) return a.set_ints("shifts", {rng.uniform(-5, 5)});
    std::vector<int64_t> dims, shifts;
    for (int64_t d = 0; d < r; d++)
      if (rng.coin(0.5)) {
        dims.push_back(rng.coin(0.3) ? d - r : d);
        shifts.push_back(rng.uniform(-5, 5));
      }
    if (dims.empty()) dims = {0}, shifts = {rng.uniform(-5, 5)};
    return a.set_ints("shifts", shifts).set_ints("dims", dims);
  };
  roll.backward = true;
  t.push_back(roll);

  for (const char *name : {"tril", "triu"}) {
    const bool lower = std::string(name) == "tril";
    OpEntry tri = entry(name, name, [lower](const std::vector<Tensor> &x, const Attrs &a) {
      return lower ? x[0].tril(a.get_int("k")) : x[0].triu(a.get_int("k"));
    });
    tri.attrs = [](const CaseContext &, Rng &rng) { return Attrs().set_int("k", rng.uniform(-3, 3)); };
    tri.backward = true;
    t.push_back(tri);
  }

  OpEntry unfold = entry("unfold", "unfold", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].unfold(a.get_int("dim"), a.get_int("size"), a.get_int("step"));
  });
  unfold.attrs = [](const CaseContext &c, Rng &rng) {
    const int64_t d = random_dim(rng, rank_of(c)), n = size_at(c, d);
    return Attrs().set_int("dim", d).set_int("size", rng.uniform(0, n)).set_int("step", rng.uniform(1, 3));
  };
  unfold.backward = true;
  t.push_back(unfold);

  for (const char *mode : {"reflect", "replicate"}) {
    OpEntry p = entry(std::string("pad_") + mode, "pad_mode", [](const std::vector<Tensor> &x, const Attrs &a) {
      const std::vector<int64_t> &f = a.get_ints("pad");
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (size_t i = 0; i + 1 < f.size(); i += 2) pairs.push_back({f[i], f[i + 1]});
      return x[0].pad_mode(pairs, a.get_string("mode"));
    }, dtypes::floats);
    p.ref_op = "pad_mode";
    const bool reflect = std::string(mode) == "reflect";
    p.attrs = [reflect, mode](const CaseContext &c, Rng &rng) {
      const int64_t r = rank_of(c);
      std::vector<int64_t> ks;
      for (int64_t k : {r - 1, r - 2})
        if (k >= 1 && k <= 3) ks.push_back(k);
      const int64_t k = ks.empty() ? 1 : rng.pick(ks);
      std::vector<int64_t> pad;
      for (int64_t i = 0; i < 2 * k; i++) {
        const int64_t d = r - k + i / 2;
        const int64_t n = d >= 0 && d < r ? c.inputs[0].shape[static_cast<size_t>(d)] : 1;
        pad.push_back(rng.uniform(0, reflect ? std::clamp<int64_t>(n - 1, 0, 2) : 2));
      }
      return Attrs().set_ints("pad", pad).set_string("mode", mode);
    };
    p.backward = true;
    t.push_back(p);
  }
}

Attrs reduce_dims_attrs(const CaseContext &c, Rng &rng) {
  const int64_t r = std::max<int64_t>(rank_of(c), 1);
  std::vector<int64_t> dims;
  if (!rng.coin(0.25))
    for (int64_t d = 0; d < r; d++)
      if (rng.coin()) dims.push_back(rng.coin(0.25) ? d - r : d);
  rng.shuffle(dims);
  // Degrees of freedom stay positive: at N - correction <= 0 torch's gradient
  // follows special cases (inf / nan by sign) that loom does not reproduce.
  int64_t n = 1;
  const Shape &s = c.inputs[0].shape;
  for (size_t d = 0; d < s.size(); d++)
    if (dims.empty() || std::count(dims.begin(), dims.end(), static_cast<int64_t>(d)) ||
        std::count(dims.begin(), dims.end(), static_cast<int64_t>(d) - r))
      n *= s[d];
  const int64_t corr = rng.uniform(0, std::clamp<int64_t>(n - 1, 0, 2));
  return Attrs().set_ints("dims", dims).set_bool("keepdim", rng.coin()).set_int("correction", corr);
}

void add_order_and_stats(std::vector<OpEntry> &t) {
  using namespace dtypes;
  for (const char *name : {"cumsum", "cumprod"}) {
    const bool sum = std::string(name) == "cumsum";
    OpEntry e = entry(name, name, [sum](const std::vector<Tensor> &x, const Attrs &a) {
      return sum ? x[0].cumsum(a.get_int("dim")) : x[0].cumprod(a.get_int("dim"));
    });
    e.attrs = [](const CaseContext &c, Rng &rng) { return Attrs().set_int("dim", random_dim(rng, rank_of(c))); };
    if (!sum) {  // products stay representable (as prod's entry)
      e.domain = [](DType dt, int, const Attrs &) {
        if (dt == DType::Bool) return Domain{0, 1, 0, 0.1};
        if (dt == DType::UInt8) return Domain{0, 2};
        return is_float(dt) ? Domain{0.7, 1.4} : Domain{-2, 2};
      };
      e.max_numel = 32;
    }
    e.reduction = true;
    e.backward = true;
    t.push_back(e);
  }

  auto sort_attrs = [](const CaseContext &c, Rng &rng) {
    return Attrs().set_int("dim", random_dim(rng, rank_of(c))).set_bool("descending", rng.coin());
  };
  auto tie = [](DType dt, int, const Attrs &) { return tie_domain(dt); };
  for (const char *name : {"sort_values", "sort_indices", "argsort"}) {
    const std::string n = name;
    OpEntry e = entry(name, n == "argsort" ? "argsort" : "sort", [n](const std::vector<Tensor> &x, const Attrs &a) {
      if (n == "argsort") return x[0].argsort(a.get_int("dim"), a.get_bool("descending"));
      auto [v, i] = x[0].sort(a.get_int("dim"), a.get_bool("descending"));
      return n == "sort_values" ? v : i;
    });
    e.attrs = sort_attrs;
    e.domain = tie;
    e.backward = n == "sort_values";
    e.max_numel = 32;
    t.push_back(e);
  }

  for (const char *name : {"topk_values", "topk_indices_gathered"}) {
    const bool values = std::string(name) == "topk_values";
    OpEntry e = entry(name, "topk", [values](const std::vector<Tensor> &x, const Attrs &a) {
      const int64_t dim = a.get_int("dim");
      auto [v, i] = x[0].topk(a.get_int("k"), dim, a.get_bool("largest"));
      return values ? v : x[0].gather(x[0].ndim() == 0 ? 0 : dim, i);
    }, all);  // bool: only a 0-d input, which torch copies without a kernel; elsewhere both reject
    e.attrs = [](const CaseContext &c, Rng &rng) {
      const int64_t d = random_dim(rng, rank_of(c));
      const int64_t k = rank_of(c) == 0 ? 1 : rng.uniform(0, size_at(c, d));
      return Attrs().set_int("dim", d).set_int("k", k).set_bool("largest", rng.coin());
    };
    e.domain = tie;
    e.max_numel = 32;
    e.backward = true;  // the reference picks tied elements as a stable sort does (see ops_index.cpp)
    t.push_back(e);
  }

  for (const char *name : {"max_dim_values", "max_dim_indices", "min_dim_values", "min_dim_indices"}) {
    const std::string n = name;
    const bool is_max = n.rfind("max", 0) == 0, values = n.find("values") != std::string::npos;
    OpEntry e = entry(name, is_max ? "max" : "min", [is_max, values](const std::vector<Tensor> &x, const Attrs &a) {
      auto [v, i] = is_max ? x[0].max(a.get_int("dim"), a.get_bool("keepdim")) : x[0].min(a.get_int("dim"), a.get_bool("keepdim"));
      return values ? v : i;
    });
    e.attrs = [](const CaseContext &c, Rng &rng) {
      return Attrs().set_int("dim", random_dim(rng, rank_of(c))).set_bool("keepdim", rng.coin());
    };
    e.domain = tie;
    e.backward = values;
    t.push_back(e);
  }

  for (const char *name : {"var", "std", "std_mean_std", "std_mean_mean"}) {
    const std::string n = name;
    OpEntry e = entry(name, n.rfind("std_mean", 0) == 0 ? "std_mean" : n, [n](const std::vector<Tensor> &x, const Attrs &a) {
      const Dims dims = a.get_ints("dims");
      const int64_t corr = a.get_int("correction");
      const bool keep = a.get_bool("keepdim");
      if (n == "var") return x[0].var(dims, corr, keep);
      if (n == "std") return x[0].std(dims, corr, keep);
      auto [s, m] = x[0].std_mean(dims, corr, keep);
      return n == "std_mean_std" ? s : m;
    }, floats);
    e.attrs = reduce_dims_attrs;
    // No empty inputs: torch's own var/std backward rejects them (its gradient has the kept dims' shape).
    e.shape_fn = [](const Shape &s, Rng &) {
      Shape out = s;
      for (int64_t &d : out) d = std::max<int64_t>(d, 1);
      return std::vector<Shape>{out};
    };
    e.reduction = true;
    e.backward = true;
    t.push_back(e);
  }

  OpEntry cov = entry("cov", "cov", [](const std::vector<Tensor> &x, const Attrs &a) {
    return x[0].cov(a.get_int("correction"));
  }, no_bool);
  cov.shape_fn = [](const Shape &s, Rng &) {
    return std::vector<Shape>{s.size() <= 2 ? s : Shape(s.end() - 2, s.end())};
  };
  cov.attrs = [](const CaseContext &, Rng &rng) { return Attrs().set_int("correction", rng.uniform(0, 2)); };
  cov.reduction = true;
  cov.backward = true;
  t.push_back(cov);
}

}  // namespace

void add_index_ops(std::vector<OpEntry> &t) {
  add_indexing(t);
  add_shaping(t);
  add_order_and_stats(t);
}

}  // namespace loom::conformance
