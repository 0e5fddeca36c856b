#include "uop/uop.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "loom/error.h"
#include "loom/host.h"
#include "uop/node_map.h"

namespace loom::uop {

namespace {
std::atomic<int64_t> g_next_buffer_id{0};
}

int64_t Buffer::next_id() { return g_next_buffer_id.load(); }

std::shared_ptr<Buffer> Buffer::create(DType dtype, int64_t size) {
  auto b = std::allocate_shared<Buffer>(shape::PoolAlloc<Buffer>());
  b->id = g_next_buffer_id++;
  b->dtype = dtype;
  b->size = size;
  return b;
}

namespace {

size_t mix(size_t h, size_t v) { return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))); }

}  // namespace

size_t arg_hash(const Arg &arg) {
  return std::visit(
      [](const auto &a) -> size_t {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, std::monostate>) return 0;
        else if constexpr (std::is_same_v<T, int64_t>) return std::hash<int64_t>()(a);
        else if constexpr (std::is_same_v<T, double>) {
          int64_t bits;
          std::memcpy(&bits, &a, 8);
          return std::hash<int64_t>()(bits) ^ 0x5555;
        } else if constexpr (std::is_same_v<T, std::string>) return std::hash<std::string>()(a);
        else if constexpr (std::is_same_v<T, shape::ShapeTracker>) return a.hash();
        else if constexpr (std::is_same_v<T, ReduceArg>) {
          size_t h = static_cast<size_t>(a.op) + 77;
          for (auto x : a.axes) h = mix(h, static_cast<size_t>(x));
          return h;
        } else if constexpr (std::is_same_v<T, WriteArg>) {
          return mix(mix(a.view.hash(), static_cast<size_t>(a.axis) + 5), (a.acc ? static_cast<size_t>(*a.acc) + 1 : 0) + 911);
        } else if constexpr (std::is_same_v<T, Param>) {
          int64_t bits;
          std::memcpy(&bits, &a.f, 8);
          return mix(mix(std::hash<int64_t>()(bits), static_cast<size_t>(a.i)), static_cast<size_t>(a.tag)) ^ 0x7777;
        } else return std::hash<int64_t>()(a.buffer ? a.buffer->id : -1) ^ 0xabcdef;
      },
      arg);
}

bool arg_equal(const Arg &a, const Arg &b) {
  if (a.index() != b.index()) return false;
  if (auto *x = std::get_if<double>(&a)) return std::memcmp(x, &std::get<double>(b), 8) == 0;
  return a == b;
}

namespace {

// Every live node by hash: open addressing with linear probing in one array,
// so adding or dropping a node allocates nothing (a node-based multimap
// allocated and freed an entry per node, most of the cost of making one). A
// node leaves the table when its last reference goes (InternAlloc::destroy),
// before its memory is freed, so each entry points at a node that is alive
// or dying; a dying one no longer locks. Dropped entries leave tombstones,
// cleared when the table is rebuilt.
// The table's lock: a spin lock, since its critical sections are short (a
// probe, a node from the pool) and an uncontended std::mutex cost a good part
// of making a node; a waiter yields its core.
class SpinLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// A new node's sources: its own list (make) or their addresses (make_ref).
using SrcAddresses = std::initializer_list<const UOpRef *>;
const UOp *source(const UOpRef &s) { return s.get(); }
const UOp *source(const UOpRef *s) { return s->get(); }

template <typename Srcs>
bool same_sources(const SrcList &a, const Srcs &b) {
  if (a.size() != b.size()) return false;
  const UOpRef *x = a.begin();
  for (const auto &s : b)
    if ((x++)->get() != source(s)) return false;
  return true;
}

// A node's hash: its op, dtype and arg, then its sources' hashes in order.
template <typename Srcs>
size_t node_hash(Op op, DType dtype, size_t arg_digest, const Srcs &src) {
  size_t h = mix(static_cast<size_t>(op) * 31 + static_cast<size_t>(dtype), arg_digest);
  for (const auto &s : src) h = mix(h, source(s)->hash);
  return h;
}

// A reference to a node of the table, or null when it is dying (its last
// reference went; it leaves the table once it has the lock). Taken from the
// node's own weak reference: no copy of it to lock and drop.
UOpRef alive(const UOp *u) {
  try {
    return u->shared_from_this();
  } catch (const std::bad_weak_ptr &) {
    return nullptr;
  }
}

class InternTable {
 public:
  SpinLock mu;

  // The live node equal to (op, dtype, src, arg) with hash h, or null.
  template <typename Srcs>
  UOpRef find(size_t h, Op op, DType dtype, const Srcs &src, const Arg &arg) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(h); slots_[i].node; i = (i + 1) & mask()) {
      const Slot &s = slots_[i];
      if (s.node == tomb() || s.hash != h) continue;
      const UOp *u = s.node;
      if (u->op == op && u->dtype == dtype && same_sources(u->src, src) && arg_equal(u->arg, arg))
        if (UOpRef live = alive(u)) return live;
    }
    return nullptr;
  }
  // A new node, entered in the table.
  UOpRef add(size_t h, size_t arg_digest, Op op, DType dtype, SrcList src, Arg arg) {
    UOpRef ref =
        std::allocate_shared<UOp>(InternAlloc<UOp>(), op, dtype, std::move(src), std::move(arg), h, arg_digest);
    insert(ref.get());
    return ref;
  }
  void insert(const UOp *u) {
    if (2 * (live_ + tombs_ + 1) > slots_.size()) rebuild();
    size_t i = home(u->hash);
    while (slots_[i].node && slots_[i].node != tomb()) i = (i + 1) & mask();
    if (slots_[i].node == tomb()) tombs_--;
    slots_[i] = {u->hash, u};
    live_++;
  }
  void erase(const UOp *u) {
    for (size_t i = home(u->hash); slots_[i].node; i = (i + 1) & mask())
      if (slots_[i].node == u) {
        slots_[i].node = tomb();
        live_--;
        tombs_++;
        return;
      }
  }

 private:
  struct Slot {
    size_t hash = 0;
    const UOp *node = nullptr;  // null: empty; tomb(): a dropped entry
  };
  static const UOp *tomb() { return reinterpret_cast<const UOp *>(alignof(UOp)); }
  size_t mask() const { return slots_.size() - 1; }
  // A hash's first slot: the top bits of its Fibonacci product, which every bit of the hash moves.
  size_t home(size_t h) const { return static_cast<size_t>((h * 0x9e3779b97f4a7c15ull) >> shift_); }
  // Four times the live entries' room (at least 1024 slots), tombstones gone: at most half full between rebuilds.
  void rebuild() {
    size_t n = 1024;
    while (n < 4 * (live_ + 1)) n *= 2;
    std::vector<Slot> old(n);
    old.swap(slots_);
    shift_ = 64 - std::bit_width(mask());
    live_ = tombs_ = 0;
    for (const Slot &s : old)
      if (s.node && s.node != tomb()) insert(s.node);
  }

  std::vector<Slot> slots_;
  size_t live_ = 0, tombs_ = 0;
  int shift_ = 64;
};
InternTable &table() {
  static auto *t = new InternTable();  // never destroyed: UOps may outlive static destruction
  return *t;
}

// The live node equal to (op, dtype, src, arg), else a new one whose sources
// `own()` gives (called only then), taking `arg`.
template <typename Srcs, typename Own>
UOpRef intern(Op op, DType dtype, const Srcs &src, Arg &arg, Own own) {
  const size_t arg_digest = arg_hash(arg);
  const size_t h = node_hash(op, dtype, arg_digest, src);
  auto &t = table();
  std::lock_guard<SpinLock> lock(t.mu);
  if (UOpRef live = t.find(h, op, dtype, src, arg)) return live;
  return t.add(h, arg_digest, op, dtype, own(), std::move(arg));
}
}  // namespace

UOpRef UOp::make(Op op, DType dtype, SrcList src, Arg arg) {
  return intern(op, dtype, src, arg, [&] { return std::move(src); });
}

UOpRef UOp::make_ref(Op op, DType dtype, SrcAddresses src, Arg arg) {
  return intern(op, dtype, src, arg, [&] { return SrcList::copy_of(src); });
}

void unintern(const UOp *p) {
  auto &t = table();
  std::lock_guard<SpinLock> l(t.mu);
  t.erase(p);
}

UOpRef UOp::const_(DType dtype, double value) {
  if (is_float(dtype)) return make(Op::Const, dtype, {}, value);
  if (dtype == DType::Bool) return make(Op::Const, dtype, {}, static_cast<int64_t>(value != 0));
  return make(Op::Const, dtype, {}, static_cast<int64_t>(value));
}
UOpRef UOp::const_int(int64_t value, DType dtype) { return make(Op::Const, dtype, {}, value); }

Param make_param(DType dtype, double value, int64_t tag) {
  Param p;
  if (is_float(dtype)) p.f = value;
  else p.i = dtype == DType::Bool ? value != 0 : static_cast<int64_t>(value);
  p.tag = tag;
  return p;
}

UOpRef UOp::param(DType dtype, double value, int64_t tag) { return make(Op::Const, dtype, {}, make_param(dtype, value, tag)); }

bool Param::operator==(const Param &o) const { return std::memcmp(&f, &o.f, 8) == 0 && i == o.i && tag == o.tag; }

double UOp::const_value() const {
  if (auto *d = std::get_if<double>(&arg)) return *d;
  if (auto *p = std::get_if<Param>(&arg)) return is_float(dtype) ? p->f : static_cast<double>(p->i);
  return static_cast<double>(std::get<int64_t>(arg));
}

uint64_t param_bits(DType dtype, const Param &p) {
  uint64_t bits = 0;
  auto put = [&](auto v) { std::memcpy(&bits, &v, sizeof v); };
  switch (dtype) {
    case DType::Float64: put(p.f); break;
    case DType::Float32: put(static_cast<float>(p.f)); break;
    case DType::Float16: put(half_bits_to_float(float_to_half_bits(static_cast<float>(p.f)))); break;
    case DType::BFloat16: put(bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(p.f)))); break;
    case DType::Bool: put(static_cast<uint8_t>(p.i != 0)); break;
    case DType::UInt8: put(static_cast<uint8_t>(p.i)); break;
    case DType::Int8: put(static_cast<int8_t>(p.i)); break;
    case DType::Int16: put(static_cast<int16_t>(p.i)); break;
    case DType::Int32: put(static_cast<int32_t>(p.i)); break;
    case DType::Int64: put(p.i); break;
  }
  return bits;
}

UOpRef UOp::with_src(SrcList new_src) const { return make(op, dtype, std::move(new_src), arg); }

UOpRef alu(Op op, const UOpRef &a) { return UOp::make_ref(op, a->dtype, {&a}); }
UOpRef alu(Op op, const UOpRef &a, const UOpRef &b) {
  return UOp::make_ref(op, is_comparison(op) ? DType::Bool : a->dtype, {&a, &b});
}
UOpRef where(const UOpRef &c, const UOpRef &a, const UOpRef &b) {
  return UOp::make_ref(Op::Where, a->dtype, {&c, &a, &b});
}
UOpRef mul_add(const UOpRef &a, const UOpRef &b, const UOpRef &c) {
  return UOp::make_ref(Op::MulAdd, a->dtype, {&a, &b, &c});
}
UOpRef operator+(const UOpRef &a, const UOpRef &b) { return alu(Op::Add, a, b); }
UOpRef operator*(const UOpRef &a, const UOpRef &b) { return alu(Op::Mul, a, b); }
UOpRef operator+(const UOpRef &a, int64_t b) { return alu(Op::Add, a, UOp::const_int(b, a->dtype)); }
UOpRef operator*(const UOpRef &a, int64_t b) { return alu(Op::Mul, a, UOp::const_int(b, a->dtype)); }

std::string arg_str(const Arg &arg) {
  return std::visit(
      [](const auto &a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        std::ostringstream os;
        if constexpr (std::is_same_v<T, std::monostate>) return "";
        else if constexpr (std::is_same_v<T, int64_t>) os << a;
        else if constexpr (std::is_same_v<T, double>) {
          os.precision(17);
          os << a;
        } else if constexpr (std::is_same_v<T, std::string>) os << a;
        else if constexpr (std::is_same_v<T, shape::ShapeTracker>) os << a.str();
        else if constexpr (std::is_same_v<T, ReduceArg>) os << op_name(a.op) << " axes=" << shape_str(a.axes);
        else if constexpr (std::is_same_v<T, WriteArg>)
          os << a.view.str() << " axis=" << a.axis << (a.acc ? std::string(" acc=") + op_name(*a.acc) : "");
        else if constexpr (std::is_same_v<T, Param>) {
          os.precision(17);
          os << "param f=" << a.f << " i=" << a.i;
          if (a.tag) os << " tag=" << a.tag;
        } else os << "buf" << (a.buffer ? a.buffer->id : -1) << "[" << (a.buffer ? a.buffer->size : 0) << "]";
        return os.str();
      },
      arg);
}

std::string UOp::str(int depth) const {
  std::ostringstream os;
  std::unordered_map<const UOp *, int> ids;
  auto order = toposort(std::shared_ptr<const UOp>(std::shared_ptr<const UOp>{}, this));
  for (auto &u : order) {
    int id = static_cast<int>(ids.size());
    ids[u.get()] = id;
    os << std::string(depth * 2, ' ') << "%" << id << " = " << op_name(u->op) << " " << dtype_name(u->dtype);
    if (!u->src.empty()) {
      os << " (";
      for (size_t i = 0; i < u->src.size(); i++) os << (i ? ", " : "") << "%" << ids[u->src[i].get()];
      os << ")";
    }
    auto a = arg_str(u->arg);
    if (!a.empty()) os << " " << a;
    os << "\n";
  }
  return os.str();
}

std::vector<const UOpRef *> toposort_refs(const UOpRef &root, size_t expected) {
  std::vector<const UOpRef *> out;
  out.reserve(std::max<size_t>(16, expected));  // most graphs a realize walks are small: one allocation
  NodeSet seen;
  seen.reserve(expected);
  std::vector<std::pair<const UOpRef *, size_t>> stack;
  stack.reserve(16);
  stack.push_back({&root, 0});
  seen.insert(root.get());
  while (!stack.empty()) {
    auto &[u, i] = stack.back();
    if (i < (*u)->src.size()) {
      const UOpRef &s = (*u)->src[i++];
      // A node with one strong reference has one parent: this edge is the
      // only way to it, so it needs no entry in `seen`. (Other threads may
      // add references, never parents inside this graph.)
      if (s.use_count() == 1 || seen.insert(s.get())) stack.push_back({&s, 0});
    } else {
      out.push_back(u);
      stack.pop_back();
    }
  }
  return out;
}

std::vector<UOpRef> toposort(const UOpRef &root) {
  std::vector<UOpRef> out;
  for (const UOpRef *u : toposort_refs(root)) out.push_back(*u);
  return out;
}

}  // namespace loom::uop
