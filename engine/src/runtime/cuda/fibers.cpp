#include "runtime/cuda/fibers.h"

#include <ucontext.h>

#include <cstdint>
#include <memory>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_FIBERS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LOOM_FIBERS_ASAN 1
#endif

namespace loom::runtime::cuda {

namespace {

constexpr size_t kStack = 256 << 10;

#if defined(__x86_64__) && !defined(LOOM_FIBERS_ASAN)
// A context is the stack pointer of a suspended fiber, its callee-saved
// registers pushed below it. swapcontext would also save the signal mask (a
// system call) and the floating-point environment at every switch, most of
// an emulated kernel's time when its block synchronizes; loom's kernels change
// neither. (Under AddressSanitizer the ucontext path below runs: ASan follows
// swapcontext's stack switches, not these.)
extern "C" void loom_fiber_swap(void **save_sp, void *load_sp);
asm(R"(
  .text
  .p2align 4
  .globl loom_fiber_swap
  .hidden loom_fiber_swap
  .type loom_fiber_swap, @function
loom_fiber_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size loom_fiber_swap, .-loom_fiber_swap
)");

struct Context {
  void *sp = nullptr;
};
void swap(Context &from, const Context &to) { loom_fiber_swap(&from.sp, to.sp); }
// The first swap to the context pops six zeroed registers and returns into
// `entry` with the stack aligned as after a call (its return address null).
void init(Context &c, char *stack, void (*entry)()) {
  const auto top = (reinterpret_cast<uintptr_t>(stack) + kStack) & ~uintptr_t{15};
  void **slot = reinterpret_cast<void **>(top) - 8;
  for (int i = 0; i < 6; i++) slot[i] = nullptr;
  slot[6] = reinterpret_cast<void *>(entry);
  slot[7] = nullptr;
  c.sp = slot;
}
#else
struct Context {
  ucontext_t uc{};
};
void swap(Context &from, const Context &to) { swapcontext(&from.uc, &to.uc); }
void init(Context &c, char *stack, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = kStack;
  c.uc.uc_link = nullptr;  // entry never returns
  makecontext(&c.uc, entry, 0);
}
#endif

struct Fibers {
  Context main;
  std::vector<Context> ctx;
  std::vector<std::unique_ptr<char[]>> stacks;  // kept for the next run (not zeroed)
  std::vector<bool> done;
  const std::function<void(unsigned)> *body = nullptr;
  unsigned current = 0;
};
thread_local Fibers *g_fibers = nullptr;

// A fiber's first frame: runs its body, then returns to run_fibers for good.
[[noreturn]] void fiber_entry() {
  Fibers &f = *g_fibers;
  const unsigned t = f.current;
  (*f.body)(t);
  f.done[t] = true;
  swap(f.ctx[t], f.main);
  __builtin_unreachable();
}

}  // namespace

void run_fibers(unsigned n, const std::function<void(unsigned)> &body) {
  static thread_local Fibers f;
  f.body = &body;
  f.ctx.resize(n);
  while (f.stacks.size() < n) f.stacks.push_back(std::make_unique_for_overwrite<char[]>(kStack));
  f.done.assign(n, false);
  for (unsigned t = 0; t < n; t++) init(f.ctx[t], f.stacks[t].get(), fiber_entry);
  g_fibers = &f;
  for (bool running = true; running;) {
    running = false;
    for (unsigned t = 0; t < n; t++) {
      if (f.done[t]) continue;
      f.current = t;
      swap(f.main, f.ctx[t]);
      running |= !f.done[t];
    }
  }
  g_fibers = nullptr;
}

void fiber_yield() {
  Fibers &f = *g_fibers;
  swap(f.ctx[f.current], f.main);
}

}  // namespace loom::runtime::cuda
