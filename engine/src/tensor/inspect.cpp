#include "loom/inspect.h"

#include "engine/realize.h"
#include "tensor/pending.h"

namespace loom {

std::vector<KernelInfo> kernels_of(const std::vector<Tensor> &tensors) {
  std::vector<UOpRef> outs;
  for (const Tensor &t : tensors) outs.push_back(t.uop());
  std::vector<KernelInfo> out;
  for (engine::RenderedKernel &k : engine::render(tensor::with_pending_updates(outs)))
    out.push_back({std::move(k.name), std::move(k.ast), std::move(k.linear), std::move(k.c_source),
                   std::move(k.cuda_source), k.cuda_blocks, k.cuda_threads, std::move(k.buffers), std::move(k.bound),
                   std::move(k.library)});
  return out;
}

}  // namespace loom
