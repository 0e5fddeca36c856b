#include "tensor/host_check.h"

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

// A plain view of a buffer that holds the host's copy of its last upload
// (uop::Buffer::host_copy): checked through the view from that copy, with no
// kernel and no wait for the device. False where `t` is no such view.
bool check_uploaded(const Tensor &t, std::function<void(const HostValues &)> &check) {
  const UOpRef &base = base_of(t.uop());
  if (base->op != Op::Buffer || !tracker_of(t.uop()).single_plain()) return false;
  const std::shared_ptr<uop::Buffer> &buf = base->arg_as<uop::BufferArg>().buffer;
  if (!buf->host_copy || buf->dtype != t.dtype()) return false;
  const shape::View &view = tracker_of(t.uop()).views[0];
  shape::View from_zero = view;
  from_zero.offset = 0;
  // Row-major from the view's offset: the values are read in place; else a
  // HostTensor over the bytes gathers them.
  auto run = [check = std::move(check), view, in_order = from_zero.contiguous()](uop::Buffer &b) {
    const size_t size = itemsize(b.dtype), bytes = static_cast<size_t>(b.size) * size;
    std::vector<std::byte> scratch;
    const auto *all = static_cast<const uint8_t *>(engine::host_bytes(b, bytes, scratch));
    if (in_order) return check(HostValues{b.dtype, view.numel(), all + static_cast<size_t>(view.offset) * size});
    const HostTensor strided{b.dtype, view.shape, view.strides, view.offset,
                             std::make_shared<std::vector<uint8_t>>(all, all + bytes)};
    const HostTensor rows = strided.to_contiguous();
    check(HostValues{b.dtype, rows.numel(), rows.storage->data()});
  };
  run(*buf);
  engine::capture_check(buf, std::move(run));
  return true;
}

}  // namespace

Tensor range_ends(const Tensor &t) {
  const size_t bytes = static_cast<size_t>(t.numel()) * itemsize(t.dtype());
  if (engine::host_addressable() || bytes <= engine::kHostCopyBytes || !is_int(t.dtype())) return t;
  const Tensor flat = t.reshape({-1});
  return Tensor::stack({flat.amin(), flat.amax()});
}

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
