// The libtorch twin of bench/ops_main.cpp (see reference/reference_bench.h).
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <map>

#include "reference_bench.h"
#include "torch_ops.h"

namespace loom::reference {

std::vector<OpTiming> time_torch_ops(int runs, int threads) {
  return torch_call("time_torch_ops", [&] {
    if (threads > 0) at::set_num_threads(threads);
    at::manual_seed(0);
    std::vector<OpTiming> out;
    const at::Tensor rows = at::randn({50000, 3072});
    const at::Tensor perm = at::randperm(50000);
    out.push_back({"copy", median_ms(runs, [&] { (void)rows.clone(); })});
    out.push_back({"index_select", median_ms(runs, [&] { (void)rows.index_select(0, perm); })});
    const at::Tensor sq = at::randn({4096, 4096});
    const at::Tensor idx = at::randint(0, 4096, {4096, 4096});
    out.push_back({"gather", median_ms(runs, [&] { (void)sq.gather(1, idx); })});
    at::Tensor acc = at::zeros({4096, 4096});
    out.push_back({"scatter_add", median_ms(runs, [&] { (void)acc.scatter_add(1, idx, sq); })});
    const at::Tensor row = at::randn({4096});
    out.push_back({"row_write", median_ms(runs, [&] { acc[7].copy_(row); }, kRowWriteReps)});
    out.push_back({"cumsum", median_ms(runs, [&] { (void)sq.cumsum(1); })});
    const at::Tensor million = at::randn({1 << 20});
    out.push_back({"sort", median_ms(runs, [&] { (void)million.sort(0); })});
    return out;
  });
}

std::vector<OpTiming> time_torch_table(int runs, int threads, const std::vector<std::string> &names) {
  return torch_call("time_torch_table", [&] {
    if (threads > 0) at::set_num_threads(threads);
    at::manual_seed(0);
    const int64_t n = int64_t{1} << 24;
    const at::Tensor a = at::randn({n}), b = at::randn({n}), c = at::randn({n}), sq = at::randn({4096, 4096});
    const at::Tensor cx = at::randn({64, 64, 16, 16}), cw = at::randn({256, 64, 3, 3}), cg = at::randn({64, 256, 16, 16});
    const at::Tensor bx = at::randn({64, 64, 32, 32}), bg = at::randn({64, 64, 32, 32}), bw = at::rand({64}),
                     bb = at::randn({64});
    const auto cl = [](const at::Tensor &t) { return t.contiguous(at::MemoryFormat::ChannelsLast); };
    const at::Tensor cxl = cl(cx), cwl = cl(cw), cgl = cl(cg), bxl = cl(bx), bgl = cl(bg);
    const auto conv_fwdbwd = [](const at::Tensor &x0, const at::Tensor &w0, const at::Tensor &g) {
      const at::Tensor x = x0.detach().requires_grad_(true), w = w0.detach().requires_grad_(true);
      (void)torch::autograd::grad({at::conv2d(x, w, {}, 1, 1)}, {x, w}, {g});
    };
    const auto bn_fwdbwd = [&](const at::Tensor &x0, const at::Tensor &g) {
      const at::Tensor x = x0.detach().requires_grad_(true), w = bw.detach().requires_grad_(true),
                       b = bb.detach().requires_grad_(true);
      (void)torch::autograd::grad({at::batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5, false)}, {x, w, b}, {g});
    };
    std::map<int64_t, std::pair<at::Tensor, at::Tensor>> mats;
    for (int64_t m : {512, 1024, 2048}) mats[m] = {at::randn({m, m}), at::randn({m, m})};
    const std::map<std::string, std::function<void()>> work{
        {"chain", [&] { (void)at::sigmoid(at::exp(at::relu(a * b + c) * 0.5) - a); }},
        {"neg", [&] { (void)a.neg(); }},
        {"clone", [&] { (void)a.clone(); }},
        {"sum_dim1", [&] { (void)sq.sum(1); }},
        {"sum_dim0", [&] { (void)sq.sum(0); }},
        {"sum_all", [&] { (void)sq.sum(); }},
        {"matmul512", [&] { (void)at::matmul(mats[512].first, mats[512].second); }},
        {"matmul1024", [&] { (void)at::matmul(mats[1024].first, mats[1024].second); }},
        {"matmul2048", [&] { (void)at::matmul(mats[2048].first, mats[2048].second); }},
        {"conv_fwd", [&] { (void)at::conv2d(cx, cw, {}, 1, 1); }},
        {"conv_fwdbwd", [&] { conv_fwdbwd(cx, cw, cg); }},
        {"conv_fwd_cl", [&] { (void)at::conv2d(cxl, cwl, {}, 1, 1); }},
        {"conv_fwdbwd_cl", [&] { conv_fwdbwd(cxl, cwl, cgl); }},
        {"bn_fwdbwd", [&] { bn_fwdbwd(bx, bg); }},
        {"bn_fwdbwd_cl", [&] { bn_fwdbwd(bxl, bgl); }},
    };
    std::vector<OpTiming> out;
    for (const std::string &name : names)
      if (auto it = work.find(name); it != work.end()) out.push_back({name, median_ms(runs, it->second)});
    return out;
  });
}

}  // namespace loom::reference
