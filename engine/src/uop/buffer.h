// Buffer: device memory behind a BUFFER UOp. The engine has the device
// allocate `mem` on first use; the UOp that names the buffer owns it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "loom/dtype.h"

namespace loom::uop {

struct Buffer {
  int64_t id;  // creation order; used for names, never pointers
  DType dtype;
  int64_t size;  // elements
  std::shared_ptr<void> mem;
  // The bytes the host last wrote into the whole buffer, kept where the
  // device's memory is not the host's (small buffers only: engine/capture.h)
  // until anything else writes it: a check of index values then reads them
  // here, with no wait for the device's queue.
  std::shared_ptr<const std::vector<std::byte>> host_copy;

  static std::shared_ptr<Buffer> create(DType dtype, int64_t size);
  // The id the next created buffer gets: buffers with a smaller id existed before.
  static int64_t next_id();
  void *data() const { return mem.get(); }
  bool allocated() const { return mem != nullptr; }
};

}  // namespace loom::uop
