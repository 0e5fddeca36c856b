#include "tensor/host_check.h"

#include <memory>
#include <utility>

#include "engine/capture.h"
#include "tensor/ops_util.h"

namespace loom::tensor {

void check_on_host(const Tensor &t, std::function<void(const HostTensor &)> check) {
  if (t.numel() == 0) return check(HostTensor::contiguous(t.dtype(), t.shape()));
  // A whole row-major buffer; realized in t's own handle when it already is one.
  const UOpRef r = row_major(t.uop());
  Tensor c = r == t.uop() ? t : make_tensor(r);
  c.realize();
  const std::shared_ptr<uop::Buffer> &buf = base_of(c.uop())->arg_as<uop::BufferArg>().buffer;
  auto run = [check = std::move(check), dtype = t.dtype(), shape = t.shape()](uop::Buffer &b) {
    HostTensor h = HostTensor::contiguous(dtype, shape);
    engine::read_buffer(h.storage->data(), b, h.storage->size());
    check(h);
  };
  run(*buf);
  engine::capture_check(buf, std::move(run));
}

}  // namespace loom::tensor
