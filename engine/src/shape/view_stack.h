// ViewStack: a ShapeTracker's views, shared by its copies until one of them
// changes. Trackers are copied wherever a graph is built (out of a VIEW's arg,
// into a new node's arg, through each movement op), and each deep copy was an
// allocation per view and per shape, stride and mask list in it; a copy is now
// one reference count. Reads go through the const accessors; any non-const
// access first takes a private copy when the views are shared (copy-on-write).
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "shape/view.h"

namespace loom::shape {

class ViewStack {
 public:
  using const_iterator = std::vector<View>::const_iterator;
  using iterator = std::vector<View>::iterator;

  ViewStack() = default;
  ViewStack(std::initializer_list<View> views) : p_(std::make_shared<std::vector<View>>(views)) {}
  explicit ViewStack(View v) : p_(std::make_shared<std::vector<View>>()) { p_->push_back(std::move(v)); }

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
  const std::vector<View> &all() const {
    static const std::vector<View> none;
    return p_ ? *p_ : none;
  }
  std::vector<View> &own() {
    if (!p_) p_ = std::make_shared<std::vector<View>>();
    else if (p_.use_count() > 1) p_ = std::make_shared<std::vector<View>>(*p_);
    return *p_;
  }

  std::shared_ptr<std::vector<View>> p_;
};

}  // namespace loom::shape
