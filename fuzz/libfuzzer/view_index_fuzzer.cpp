// libFuzzer harness for the view layer. Bytes choose a base shape and a chain
// of movement ops (reshape, permute, expand, pad, shrink, flip, slices with
// any step, transpose, as_strided on the base), applied through the public
// Tensor API. For every element of the result, the flat index the engine
// computes (the view stack composed as the scheduler composes it, lowered by
// codegen::view_index, before and after the symbolic rules) must equal the
// index found by walking the chain back by hand, and must lie inside the base
// buffer. A request torch rejects must raise loom::Error; a request torch
// accepts must not; anything else escaping (InternalError, a sanitizer
// report) is a finding. Nothing is realized: no kernel is compiled.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/indexing.h"
#include "index_eval.h"
#include "loom/tensor.h"
#include "uop/graph.h"
#include "uop/symbolic.h"

namespace {

using loom::Shape;
using loom::Tensor;
using Index = std::vector<int64_t>;

[[noreturn]] void finding(const std::string &what, const std::string &chain) {
  std::fprintf(stderr, "view_index_fuzzer: %s\n  chain: %s\n", what.c_str(), chain.c_str());
  std::abort();
}

// Saturates instead of overflowing (huge shapes are requests too).
int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

std::optional<int64_t> wrap(int64_t d, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r) return std::nullopt;
  return d < 0 ? d + r : d;
}

Index unravel(int64_t flat, const Shape &s) {
  Index i(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    i[d] = flat % s[d];
    flat /= s[d];
  }
  return i;
}

int64_t ravel(const Index &i, const Shape &s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); d++) f = f * s[d] + i[d];
  return f;
}

// One accepted step of the chain, as the brute-force walk needs it: maps an
// index of its output to an index of its input (nullopt: a padded element).
struct Step {
  std::string text;
  Shape in, out;
  enum Kind { Reshape, Permute, Expand, Pad, Shrink, Flip, Slice, AsStrided } kind;
  Index a, b;  // permutation / pads before / shrink begins / flipped dims / as_strided strides
  int64_t dim = 0, start = 0, step = 1, offset = 0;

  std::optional<Index> back(const Index &o) const {
    Index i(in.size());
    switch (kind) {
      case Reshape: return unravel(ravel(o, out), in);
      case Permute:
        for (size_t d = 0; d < a.size(); d++) i[static_cast<size_t>(a[d])] = o[d];
        return i;
      case Expand: {
        const size_t lead = out.size() - in.size();
        for (size_t d = 0; d < in.size(); d++) i[d] = in[d] == 1 ? 0 : o[d + lead];
        return i;
      }
      case Pad:
        for (size_t d = 0; d < in.size(); d++) {
          i[d] = o[d] - a[d];
          if (i[d] < 0 || i[d] >= in[d]) return std::nullopt;
        }
        return i;
      case Shrink:
        for (size_t d = 0; d < in.size(); d++) i[d] = o[d] + a[d];
        return i;
      case Flip:
        i = o;
        for (int64_t d : a) i[static_cast<size_t>(d)] = in[static_cast<size_t>(d)] - 1 - o[static_cast<size_t>(d)];
        return i;
      case Slice:
        i = o;
        i[static_cast<size_t>(dim)] = start + o[static_cast<size_t>(dim)] * step;
        return i;
      case AsStrided: {  // the storage index itself, as a 1-d index into the base's flat storage
        int64_t f = offset;
        for (size_t d = 0; d < o.size(); d++) f += o[d] * a[d];
        return unravel(f, in);
      }
    }
    return std::nullopt;
  }
};

struct Chain {
  Shape base;
  std::vector<Step> steps;
  std::string text() const {
    std::string s = "base (";
    for (int64_t d : base) s += std::to_string(d) + ",";
    s += ")";
    for (const Step &st : steps) s += " ." + st.text;
    return s;
  }
  // The base element an element of the result reads, by walking the chain back.
  std::optional<int64_t> source(Index i) const {
    for (size_t k = steps.size(); k-- > 0;) {
      auto prev = steps[k].back(i);
      if (!prev) return std::nullopt;
      i = *prev;
    }
    return ravel(i, base);
  }
};

std::string list(const Index &v) {
  std::string s = "[";
  for (int64_t x : v) s += std::to_string(x) + ",";
  return s + "]";
}

// A size or index near the interesting range, sometimes far outside it.
int64_t number(FuzzedDataProvider &in, int64_t lo, int64_t hi) {
  if (lo > hi) std::swap(lo, hi);
  if (in.ConsumeIntegralInRange<int>(0, 31) == 0) return in.ConsumeIntegral<int64_t>();
  return in.ConsumeIntegralInRange<int64_t>(lo, hi);
}

// Draws one movement op and applies it to t, updating the model. Returns
// false when the engine rejected it (with loom::Error, as it must where torch
// rejects).
bool apply_step(FuzzedDataProvider &in, Tensor &t, Chain &chain) {
  const Shape cur = t.shape();
  const int64_t rank = static_cast<int64_t>(cur.size());
  Step s;
  s.in = cur;
  std::optional<Shape> out;  // the model's output shape; nullopt: torch rejects
  std::function<Tensor()> run;
  switch (in.ConsumeIntegralInRange<int>(0, 8)) {
    case 0: {  // reshape, one dim may be -1
      Shape want(static_cast<size_t>(in.ConsumeIntegralInRange<int>(0, 4)));
      for (int64_t &d : want) d = number(in, -1, 6);
      s.kind = Step::Reshape;
      s.text = "reshape(" + list(want) + ")";
      int64_t known = 1, infer = -1;
      bool ok = true;
      for (size_t d = 0; d < want.size(); d++) {
        if (want[d] == -1 && infer < 0) infer = static_cast<int64_t>(d);
        else if (want[d] < 0) ok = false;
        else if (__builtin_mul_overflow(known, want[d], &known)) ok = false;
      }
      Shape res = want;
      if (ok && infer >= 0) {
        if (known == 0 || numel(cur) % known != 0) ok = false;
        else res[static_cast<size_t>(infer)] = numel(cur) / known;
      }
      if (ok && numel(res) == numel(cur)) out = res;
      run = [&t, want] { return t.reshape(want); };
      break;
    }
    case 1: {  // permute
      Index order(static_cast<size_t>(in.ConsumeBool() ? rank : in.ConsumeIntegralInRange<int64_t>(0, 4)));
      for (int64_t &d : order) d = in.ConsumeIntegralInRange<int64_t>(-rank - 1, rank);
      s.kind = Step::Permute;
      s.text = "permute(" + list(order) + ")";
      Index w;
      bool ok = static_cast<int64_t>(order.size()) == rank;
      for (int64_t d : order) {
        auto x = rank ? wrap(d, rank) : std::nullopt;
        if (!x || std::count(w.begin(), w.end(), *x)) ok = false;
        else w.push_back(*x);
      }
      if (ok) {
        s.a = w;
        Shape res(cur.size());
        for (size_t d = 0; d < w.size(); d++) res[d] = cur[static_cast<size_t>(w[d])];
        out = res;
      }
      run = [&t, order] { return t.permute(order); };
      break;
    }
    case 2: {  // expand, -1 keeps a dim, new leading dims
      Shape want(static_cast<size_t>(std::max<int64_t>(0, rank + in.ConsumeIntegralInRange<int64_t>(-1, 2))));
      for (size_t d = 0; d < want.size(); d++) {
        const size_t lead = want.size() > cur.size() ? want.size() - cur.size() : 0;
        want[d] = d >= lead && d - lead < cur.size() && in.ConsumeBool() ? cur[d - lead] : number(in, -1, 5);
      }
      if (std::any_of(want.begin(), want.end(), [](int64_t v) { return v > 64; })) return false;  // huge: harness B
      s.kind = Step::Expand;
      s.text = "expand(" + list(want) + ")";
      bool ok = want.size() >= cur.size();
      Shape res = want;
      const size_t lead = ok ? want.size() - cur.size() : 0;
      for (size_t d = 0; ok && d < want.size(); d++) {
        if (d < lead) ok = want[d] >= 0;
        else if (want[d] == -1) res[d] = cur[d - lead];
        else ok = want[d] >= 0 && (cur[d - lead] == 1 || cur[d - lead] == want[d]);
      }
      if (ok) out = res;
      run = [&t, want] { return t.expand(want); };
      break;
    }
    case 3: {  // pad with zeros
      std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(in.ConsumeIntegralInRange<int64_t>(0, 4) == 0 ? rank + 1 : rank));
      for (auto &[b, e] : p) b = number(in, -1, 3), e = number(in, -1, 3);
      s.kind = Step::Pad;
      Index flat;
      for (auto [b, e] : p) flat.push_back(b), flat.push_back(e);
      s.text = "pad(" + list(flat) + ")";
      bool ok = static_cast<int64_t>(p.size()) == rank;
      Shape res = cur;
      for (size_t d = 0; ok && d < p.size(); d++) {
        ok = p[d].first >= 0 && p[d].second >= 0 && p[d].first <= 64 && p[d].second <= 64;
        if (ok) res[d] += p[d].first + p[d].second, s.a.push_back(p[d].first);
      }
      // A result past 2^63 elements (padding an empty view of a huge dim): torch's storage size check rejects it.
      if (ok && numel(res) < INT64_MAX) out = res;
      else if (!ok && static_cast<int64_t>(p.size()) == rank && std::all_of(p.begin(), p.end(), [](auto q) { return q.first >= 0 && q.second >= 0; }))
        return false;  // huge pads: not modelled (the engine may accept them)
      run = [&t, p] { return t.pad(p); };
      break;
    }
    case 4: {  // shrink
      std::vector<std::pair<int64_t, int64_t>> b(static_cast<size_t>(rank));
      for (size_t d = 0; d < b.size(); d++) {
        b[d].first = number(in, -1, cur[d]);
        b[d].second = number(in, b[d].first, cur[d] + 1);
      }
      s.kind = Step::Shrink;
      Index flat;
      for (auto [x, y] : b) flat.push_back(x), flat.push_back(y);
      s.text = "shrink(" + list(flat) + ")";
      bool ok = true;
      Shape res = cur;
      for (size_t d = 0; d < b.size(); d++) {
        ok = ok && 0 <= b[d].first && b[d].first <= b[d].second && b[d].second <= cur[d];
        if (ok) res[d] = b[d].second - b[d].first, s.a.push_back(b[d].first);
      }
      if (ok) out = res;
      run = [&t, b] { return t.shrink(b); };
      break;
    }
    case 5: {  // flip
      Index dims(static_cast<size_t>(in.ConsumeIntegralInRange<int64_t>(0, 3)));
      for (int64_t &d : dims) d = in.ConsumeIntegralInRange<int64_t>(-rank - 1, rank);
      s.kind = Step::Flip;
      s.text = "flip(" + list(dims) + ")";
      bool ok = true;
      for (int64_t d : dims) {  // a 0-d tensor flips over dim 0 or -1 as over nothing
        auto x = wrap(d, rank);
        if (!x || std::count(s.a.begin(), s.a.end(), *x)) ok = false;
        else s.a.push_back(*x);
      }
      if (rank == 0) s.a.clear();
      if (ok) out = cur;
      run = [&t, dims] { return t.flip(dims); };
      break;
    }
    case 6: {  // slice with any step (Python semantics, negative steps included)
      const int64_t dim = in.ConsumeIntegralInRange<int64_t>(-rank - 1, rank);
      std::optional<int64_t> start, stop;
      if (in.ConsumeBool()) start = number(in, -7, 7);
      if (in.ConsumeBool()) stop = number(in, -7, 7);
      const int64_t step = number(in, -3, 3);
      s.kind = Step::Slice;
      s.text = "slice(" + std::to_string(dim) + ", " + (start ? std::to_string(*start) : "_") + ", " +
               (stop ? std::to_string(*stop) : "_") + ", " + std::to_string(step) + ")";
      auto d = rank ? wrap(dim, rank) : std::nullopt;
      if (d && step != 0) {
        const int64_t n = cur[static_cast<size_t>(*d)];
        auto norm = [n](int64_t v, int64_t lo, int64_t hi) {
          if (v < 0) v = v < -n ? lo : v + n;
          return std::clamp(v, lo, hi);
        };
        int64_t b, e, len;
        if (step > 0) {
          b = start ? norm(*start, 0, n) : 0;
          e = stop ? norm(*stop, 0, n) : n;
          len = e > b ? (e - b - 1) / step + 1 : 0;
        } else {
          b = start ? norm(*start, -1, n - 1) : n - 1;
          e = stop ? norm(*stop, -1, n - 1) : -1;
          len = b > e ? (b - e - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1 : 0;
        }
        Shape res = cur;
        res[static_cast<size_t>(*d)] = len;
        s.dim = *d, s.start = b, s.step = step;
        out = res;
      }
      run = [&t, dim, start, stop, step] { return t.slice(dim, start, stop, step); };
      break;
    }
    case 7: {  // transpose
      const int64_t d0 = in.ConsumeIntegralInRange<int64_t>(-rank - 1, rank), d1 = in.ConsumeIntegralInRange<int64_t>(-rank - 1, rank);
      s.kind = Step::Permute;
      s.text = "transpose(" + std::to_string(d0) + ", " + std::to_string(d1) + ")";
      auto a = wrap(d0, rank), b = wrap(d1, rank);
      if (rank == 0 && a && b) {
        out = cur;  // a 0-d tensor transposes to itself
        s.kind = Step::Reshape;
      } else if (a && b) {
        s.a.resize(cur.size());
        for (size_t d = 0; d < cur.size(); d++) s.a[d] = static_cast<int64_t>(d);
        std::swap(s.a[static_cast<size_t>(*a)], s.a[static_cast<size_t>(*b)]);
        Shape res(cur.size());
        for (size_t d = 0; d < cur.size(); d++) res[d] = cur[static_cast<size_t>(s.a[d])];
        out = res;
      }
      run = [&t, d0, d1] { return t.transpose(d0, d1); };
      break;
    }
    default: {  // as_strided, on the untouched base only (its storage is the base buffer)
      if (!chain.steps.empty()) return false;
      Shape size(static_cast<size_t>(in.ConsumeIntegralInRange<int>(0, 3)));
      Index stride(size.size());
      for (size_t d = 0; d < size.size(); d++) size[d] = number(in, -1, 4), stride[d] = number(in, -1, 3);
      const int64_t offset = number(in, -1, 4);
      s.kind = Step::AsStrided;
      s.in = {numel(chain.base)};
      s.text = "as_strided(" + list(size) + ", " + list(stride) + ", " + std::to_string(offset) + ")";
      bool ok = offset >= 0 && std::all_of(size.begin(), size.end(), [](int64_t v) { return v >= 0 && v <= 64; }) &&
                std::all_of(stride.begin(), stride.end(), [](int64_t v) { return v >= 0 && v <= 64; }) && offset <= 64;
      if (ok) {
        int64_t need = 1 + offset;
        for (size_t d = 0; d < size.size(); d++) need += (size[d] - 1) * stride[d];
        ok = numel(size) == 0 || need <= numel(chain.base);
      }
      const bool modelled = ok || (offset < 0 || std::any_of(size.begin(), size.end(), [](int64_t v) { return v < 0; }) ||
                                   std::any_of(stride.begin(), stride.end(), [](int64_t v) { return v < 0; }));
      if (!modelled) return false;  // huge values: not modelled
      if (ok) s.a = stride, s.offset = offset, out = size;
      run = [&t, size, stride, offset] { return t.as_strided(size, stride, offset); };
      // The storage walk goes straight to the base: the model's base becomes the flat storage.
      if (ok) chain.base = s.in;
      break;
    }
  }
  Tensor r;
  try {
    r = run();
  } catch (const loom::Error &e) {
    if (out) finding(std::string("rejects a request torch accepts: ") + e.what(), chain.text() + " ." + s.text);
    return false;
  } catch (const std::exception &e) {
    finding(std::string("not a loom::Error: ") + e.what(), chain.text() + " ." + s.text);
  }
  if (!out) finding("accepts a request torch rejects", chain.text() + " ." + s.text);
  if (r.shape() != *out) finding("shape " + list(r.shape()) + ", expected " + list(*out), chain.text() + " ." + s.text);
  s.out = *out;
  chain.steps.push_back(s);
  t = r;
  return true;
}

// Every element's index as the engine computes it, against the walk.
void check_indices(const Tensor &t, const Chain &chain, int64_t base_numel) {
  using namespace loom;
  const Shape &shape = t.shape();
  if (numel(shape) > 2048) return;
  uop::UOpRef u = t.uop();
  shape::ShapeTracker st = uop::tracker_of(u);
  uop::UOpRef cur = uop::base_of(u);
  for (; cur->op == uop::Op::View; cur = cur->src[0]) st = st.compose_onto(cur->arg_as<shape::ShapeTracker>());
  if (cur->op != uop::Op::Buffer) finding("a movement chain does not end at the buffer", chain.text());
  std::vector<uop::UOpRef> ranges;
  for (size_t d = 0; d < shape.size(); d++)
    ranges.push_back(shape[d] == 1 ? uop::UOp::const_int(0)
                                   : uop::UOp::make(uop::Op::Range, DType::Int64, {uop::UOp::const_int(shape[d])},
                                                    static_cast<int64_t>(d)));
  const auto [flat, valid] = codegen::view_index(st, ranges);
  const uop::UOpRef sflat = uop::simplify(flat), svalid = uop::simplify(valid);
  for (int64_t e = 0; e < numel(shape); e++) {
    const Index i = unravel(e, shape);
    fuzz::IndexEnv env;
    for (size_t d = 0; d < i.size(); d++) env[static_cast<int64_t>(d)] = i[d];
    const std::optional<int64_t> want = chain.source(i);
    for (const auto &[f, v] : {std::pair{flat, valid}, std::pair{sflat, svalid}}) {
      const bool ok = fuzz::eval_index(v, env) != 0;
      const std::string at = "element " + list(i) + (f == flat ? "" : " (simplified)");
      if (ok != want.has_value()) finding(at + ": valid " + std::to_string(ok) + ", walk says " + std::to_string(want.has_value()), chain.text());
      if (!ok) continue;
      const int64_t got = fuzz::eval_index(f, env);
      if (got != *want) finding(at + ": index " + std::to_string(got) + ", walk says " + std::to_string(*want), chain.text());
      if (got < 0 || got >= base_numel) finding(at + ": index " + std::to_string(got) + " outside the buffer", chain.text());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  Chain chain;
  chain.base.resize(static_cast<size_t>(in.ConsumeIntegralInRange<int>(0, 4)));
  for (int64_t &d : chain.base) d = in.ConsumeIntegralInRange<int64_t>(0, 5);
  const int64_t base_numel = numel(chain.base);
  Tensor t = Tensor::empty(chain.base, loom::DType::Float32);
  const int n = in.ConsumeIntegralInRange<int>(0, 8);
  for (int k = 0; k < n && in.remaining_bytes() > 0; k++) {
    apply_step(in, t, chain);
    if (numel(t.shape()) > (1 << 16)) break;
  }
  check_indices(t, chain, base_numel);
  return 0;
}
