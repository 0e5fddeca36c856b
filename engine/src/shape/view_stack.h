// ViewStack: a ShapeTracker's views, shared by its copies until one of them
// changes. Trackers are copied wherever a graph is built (out of a VIEW's arg,
// into a new node's arg, through each movement op), and each deep copy was an
// allocation per view and per shape, stride and mask list in it; a copy is now
// one reference count. Reads go through the const accessors; any non-const
// access first takes a private copy when the views are shared (copy-on-write).
// The shared list and its views' array come from the graph's pool (shape/pool.h):
// a training step makes and drops thousands of trackers, and the C library's
// allocator served most of those through its slow path.
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "shape/pool.h"
#include "shape/view.h"

namespace loom::shape {

class ViewStack {
  using Views = PoolVector<View>;

 public:
  using const_iterator = Views::const_iterator;
  using iterator = Views::iterator;

  ViewStack() = default;
  ViewStack(std::initializer_list<View> views) : p_(make(views)) {}
  explicit ViewStack(View v) : p_(make()) {
    p_->reserve(1);
    p_->push_back(std::move(v));
  }

  size_t size() const { return p_ ? p_->size() : 0; }
  bool empty() const { return size() == 0; }
  const View &operator[](size_t i) const { return (*p_)[i]; }
  const View &at(size_t i) const { return all().at(i); }
  const View &front() const { return p_->front(); }
  const View &back() const { return p_->back(); }
  const_iterator begin() const { return all().begin(); }
  const_iterator end() const { return all().end(); }

  View &operator[](size_t i) { return own()[i]; }
  View &front() { return own().front(); }
  View &back() { return own().back(); }
  iterator begin() { return own().begin(); }
  iterator end() { return own().end(); }
  void push_back(View v) { own().push_back(std::move(v)); }
  iterator erase(const_iterator it) {
    const auto i = it - all().begin();  // an iterator into the shared vector, before own() copies it
    return own().erase(own().begin() + i);
  }

  bool operator==(const ViewStack &o) const { return p_ == o.p_ || all() == o.all(); }

 private:
  template <typename... A>
  static std::shared_ptr<Views> make(A &&...a) {
    return std::allocate_shared<Views>(PoolAlloc<Views>(), std::forward<A>(a)...);
  }
  const Views &all() const {
    static const Views none;
    return p_ ? *p_ : none;
  }
  Views &own() {
    if (!p_) p_ = make();
    else if (p_.use_count() > 1) p_ = make(*p_);
    return *p_;
  }

  std::shared_ptr<Views> p_;
};

}  // namespace loom::shape
