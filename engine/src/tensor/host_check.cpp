#include "tensor/host_check.h"

#include <memory>
#include <utility>
#include <vector>

#include "engine/capture.h"
#include "engine/realize.h"
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
    if (const void *p = engine::host_address(b)) {  // read in place: counted as the copy a GPU makes
      engine::stats().host_reads++;
      engine::stats().host_read_bytes += numel * static_cast<int64_t>(itemsize(dtype));
      return check(HostValues{dtype, numel, p});
    }
    std::vector<std::byte> copy(static_cast<size_t>(numel) * itemsize(dtype));
    engine::read_buffer(copy.data(), b, copy.size());
    check(HostValues{dtype, numel, copy.data()});
  };
  run(*buf);
  engine::capture_check(buf, std::move(run));
}

}  // namespace loom::tensor
