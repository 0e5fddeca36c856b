#include "tensor/host_check.h"

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "engine/capture.h"
#include "tensor/ops_util.h"
#include "uop/graph.h"

namespace loom::tensor {

void realize_for_host(Tensor &t) {
  if (!uop::whole_buffer(t.uop().get())) t.realize();
}

namespace {

// The row-major elements of a plain view over `base` (items of `size`
// bytes): in place where they lie in order, else gathered into `out`.
const void *through_view(const std::byte *base, size_t size, const shape::View &v, std::vector<std::byte> &out) {
  const std::vector<int64_t> order = row_major_strides(v.shape);
  bool in_order = true;
  for (size_t d = 0; d < v.shape.size(); d++) in_order &= v.shape[d] == 1 || v.strides[d] == order[d];
  if (in_order) return base + static_cast<size_t>(v.offset) * size;
  const int64_t n = v.numel(), rank = static_cast<int64_t>(v.shape.size());
  out.resize(static_cast<size_t>(n) * size);
  std::vector<int64_t> at(v.shape.size(), 0);
  int64_t flat = v.offset;
  for (int64_t i = 0; i < n; i++) {
    std::memcpy(out.data() + static_cast<size_t>(i) * size, base + static_cast<size_t>(flat) * size, size);
    for (int64_t d = rank - 1; d >= 0; d--) {
      if (++at[d] < v.shape[d]) {
        flat += v.strides[d];
        break;
      }
      flat -= v.strides[d] * (v.shape[d] - 1);
      at[d] = 0;
    }
  }
  return out.data();
}

// A plain view of a buffer that holds the host's copy of its last upload
// (uop::Buffer::host_copy): checked through the view from that copy, with no
// kernel and no wait for the device. False where `t` is no such view.
bool check_uploaded(const Tensor &t, std::function<void(const HostValues &)> &check) {
  const UOpRef &base = base_of(t.uop());
  if (base->op != Op::Buffer || !tracker_of(t.uop()).single_plain()) return false;
  const std::shared_ptr<uop::Buffer> &buf = base->arg_as<uop::BufferArg>().buffer;
  if (!buf->host_copy || buf->dtype != t.dtype()) return false;
  auto run = [check = std::move(check), view = tracker_of(t.uop()).views[0]](uop::Buffer &b) {
    const size_t size = itemsize(b.dtype);
    std::vector<std::byte> scratch, gathered;
    const auto *all = static_cast<const std::byte *>(engine::host_bytes(b, static_cast<size_t>(b.size) * size, scratch));
    check(HostValues{b.dtype, view.numel(), through_view(all, size, view, gathered)});
  };
  run(*buf);
  engine::capture_check(buf, std::move(run));
  return true;
}

}  // namespace

void check_on_host(const Tensor &t, std::function<void(const HostValues &)> check) {
  if (t.numel() == 0) return check(HostValues{t.dtype(), 0, nullptr});
  if (check_uploaded(t, check)) return;
  // A whole row-major buffer; realized in t's own handle when it already is one.
  const UOpRef r = row_major(t.uop());
  Tensor c = r == t.uop() ? t : make_tensor(r);
  realize_for_host(c);
  const std::shared_ptr<uop::Buffer> &buf = base_of(c.uop())->arg_as<uop::BufferArg>().buffer;
  auto run = [check = std::move(check), dtype = t.dtype(), numel = t.numel()](uop::Buffer &b) {
    std::vector<std::byte> scratch;
    check(HostValues{dtype, numel, engine::host_bytes(b, static_cast<size_t>(numel) * itemsize(dtype), scratch)});
  };
  run(*buf);
  engine::capture_check(buf, std::move(run));
}

}  // namespace loom::tensor
