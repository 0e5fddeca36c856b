// PoolFunction: a copyable callable, as std::function, whose target lives in
// the graph's pool (shape/pool.h). Every op that records a gradient holds its
// backward rule (and a view its replay) as one: std::function would put each
// rule's captures in a block of its own from malloc, a few hundred blocks a
// training step, made and dropped together.
#pragma once
#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

#include "shape/pool.h"

namespace loom::shape {

template <typename Signature>
class PoolFunction;

template <typename R, typename... A>
class PoolFunction<R(A...)> {
 public:
  PoolFunction() noexcept = default;
  PoolFunction(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): as std::function
  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, PoolFunction> && std::is_invocable_r_v<R, D &, A...>>>
  PoolFunction(F &&f)  // NOLINT(google-explicit-constructor): as std::function
      : target_(pool_new<D>(std::forward<F>(f))), ops_(&kOps<D>) {}
  PoolFunction(const PoolFunction &o) : target_(o.ops_ ? o.ops_->clone(o.target_) : nullptr), ops_(o.ops_) {}
  PoolFunction(PoolFunction &&o) noexcept
      : target_(std::exchange(o.target_, nullptr)), ops_(std::exchange(o.ops_, nullptr)) {}
  PoolFunction &operator=(PoolFunction o) noexcept {  // a copy, a move, nullptr or a new target
    std::swap(target_, o.target_);
    std::swap(ops_, o.ops_);
    return *this;
  }
  ~PoolFunction() {
    if (ops_) ops_->destroy(target_);
  }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  R operator()(A... args) const {
    if (!ops_) throw std::bad_function_call();
    return ops_->call(target_, std::forward<A>(args)...);
  }

 private:
  struct Ops {
    R (*call)(void *, A &&...);
    void *(*clone)(const void *);
    void (*destroy)(void *);
  };
  template <typename D>
  static R call(void *f, A &&...args) {
    return std::invoke(*static_cast<D *>(f), std::forward<A>(args)...);
  }
  template <typename D>
  static void *clone(const void *f) {
    return pool_new<D>(*static_cast<const D *>(f));
  }
  template <typename D>
  static void destroy(void *f) {
    pool_delete(static_cast<D *>(f));
  }
  template <typename D>
  static constexpr Ops kOps{&call<D>, &clone<D>, &destroy<D>};

  void *target_ = nullptr;
  const Ops *ops_ = nullptr;
};

}  // namespace loom::shape
