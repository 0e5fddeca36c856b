#include "uop/node_map.h"

#include <array>

#include "shape/pool.h"

namespace loom::uop::detail {

namespace {

constexpr size_t kMinKeptBytes = 1024;           // smaller arrays: the C library's own per-thread cache serves them
constexpr size_t kMaxKeptBytes = size_t{16} << 20;  // per thread

struct Kept {
  void *p = nullptr;
  size_t bytes = 0;
};

struct Arrays {
  std::array<Kept, 16> kept;
  size_t bytes = 0;
  ~Arrays();
};

thread_local bool t_exited = false;  // plain data: readable after the thread's Arrays is destroyed
thread_local Arrays t_arrays;

Arrays::~Arrays() {
  t_exited = true;
  for (Kept &k : kept) ::operator delete(k.p);
}

bool keeps(size_t bytes) { return shape::pool_enabled() && bytes >= kMinKeptBytes && !t_exited; }

}  // namespace

void *take_slot_array(size_t bytes) {
  if (keeps(bytes))
    for (Kept &k : t_arrays.kept)
      if (k.p && k.bytes == bytes) {
        t_arrays.bytes -= bytes;
        return std::exchange(k.p, nullptr);
      }
  return ::operator new(bytes);
}

void give_slot_array(void *p, size_t bytes) {
  if (keeps(bytes) && t_arrays.bytes + bytes <= kMaxKeptBytes)
    for (Kept &k : t_arrays.kept)
      if (!k.p) {
        k = {p, bytes};
        t_arrays.bytes += bytes;
        return;
      }
  ::operator delete(p);
}

}  // namespace loom::uop::detail
