// A node's sources, fixed when it is made. Nearly every op has one to three,
// so up to three are held inline in the node: making one allocates no array,
// and walking a graph reads a node's sources from the node's own memory.
// More than three (a SINK of many outputs) go to the heap.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <vector>

namespace loom::uop {

class UOp;
using UOpRef = std::shared_ptr<const UOp>;

class SrcList {
 public:
  static constexpr size_t kInline = 3;

  SrcList() = default;
  SrcList(std::initializer_list<UOpRef> l) : SrcList(l.begin(), l.size()) {}
  SrcList(const std::vector<UOpRef> &v) : SrcList(v.data(), v.size()) {}  // NOLINT: implicit, as a vector converts
  SrcList(std::vector<UOpRef> &&v) {                                      // NOLINT
    UOpRef *d = reserve(v.size());
    for (size_t i = 0; i < v.size(); i++) new (d + i) UOpRef(std::move(v[i]));
    n_ = static_cast<uint32_t>(v.size());
  }
  SrcList(const SrcList &o) : SrcList(o.data(), o.size()) {}
  // Copies of the sources at these addresses (no temporary copies between).
  static SrcList copy_of(std::initializer_list<const UOpRef *> l) {
    SrcList s;
    UOpRef *d = s.reserve(l.size());
    for (const UOpRef *r : l) new (d++) UOpRef(*r);
    s.n_ = static_cast<uint32_t>(l.size());
    return s;
  }
  SrcList(SrcList &&o) noexcept {
    if (o.n_ > kInline) {
      heap_ = o.heap_;
    } else {
      for (size_t i = 0; i < o.n_; i++) {
        new (inline_data() + i) UOpRef(std::move(o.inline_data()[i]));
        o.inline_data()[i].~UOpRef();
      }
    }
    n_ = o.n_;
    o.n_ = 0;
  }
  SrcList &operator=(const SrcList &) = delete;
  SrcList &operator=(SrcList &&) = delete;
  ~SrcList() {
    UOpRef *d = data();
    for (size_t i = 0; i < n_; i++) d[i].~UOpRef();
    if (n_ > kInline) std::allocator<UOpRef>().deallocate(heap_, n_);
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const UOpRef *data() const { return n_ > kInline ? heap_ : inline_data(); }
  const UOpRef *begin() const { return data(); }
  const UOpRef *end() const { return data() + n_; }
  const UOpRef &operator[](size_t i) const { return data()[i]; }
  const UOpRef &front() const { return data()[0]; }
  const UOpRef &back() const { return data()[n_ - 1]; }
  std::vector<UOpRef> vec() const { return {begin(), end()}; }

  bool operator==(const SrcList &o) const {
    if (n_ != o.n_) return false;
    for (size_t i = 0; i < n_; i++)
      if (data()[i] != o.data()[i]) return false;
    return true;
  }

 private:
  SrcList(const UOpRef *from, size_t n) {
    UOpRef *d = reserve(n);
    for (size_t i = 0; i < n; i++) new (d + i) UOpRef(from[i]);
    n_ = static_cast<uint32_t>(n);
  }
  // Room for n sources (n_ is set once they are constructed).
  UOpRef *reserve(size_t n) {
    if (n <= kInline) return inline_data();
    heap_ = std::allocator<UOpRef>().allocate(n);
    return heap_;
  }
  UOpRef *data() { return n_ > kInline ? heap_ : inline_data(); }
  UOpRef *inline_data() { return std::launder(reinterpret_cast<UOpRef *>(inline_)); }
  const UOpRef *inline_data() const { return std::launder(reinterpret_cast<const UOpRef *>(inline_)); }

  union {
    alignas(UOpRef) unsigned char inline_[kInline * sizeof(UOpRef)];
    UOpRef *heap_;
  };
  uint32_t n_ = 0;
};

}  // namespace loom::uop
