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

void check_on_host(const Tensor &t, std::function<void(const HostValues &)> check) {
  if (t.numel() == 0) return check(HostValues{t.dtype(), 0, nullptr});
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
