// loom-bench-table: the CPU workloads of the optimizer work in loom and in
// libtorch (same shapes, same process, libtorch at `threads` intra-op threads),
// printed as one table.
//   loom-bench-table [runs=3] [threads=2] [--tinygrad=FILE] [workload...]
// With no workload names it runs all of them (hlb256 takes minutes).
// --tinygrad=FILE adds tinygrad's column from FILE, the output of
// bench/tinygrad_rows.py (lines `tinygrad <workload> <ms>`, timed in another
// process: tinygrad is not part of the build), and loom's speed against it
// (the optimizer issue asks for 10x). Times
// are medians after one warm-up call (which compiles); "speed" is libtorch's
// time over loom's (above 1: loom is faster), "target" the speed the
// optimizer issue asks for. Rows with GEMMs run twice: "loom" with the extern
// GEMM (OpenBLAS) on, "generated" with it off (loom::backends), each with its
// own target. Rates are loom's: GB/s counts the bytes that must
// move (inputs read once, output written once), GFLOP/s 2*M*N*K (conv: per
// output element 2*C_in*9, times 3 for forward and both backward passes).
// kernels and work are per call (work: ALU ops executed / ops the graph needs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hlb_step.h"
#include "index_ops.h"
#include "loom/autograd.h"
#include "loom/backends.h"
#include "loom/nn.h"
#include "loom/tensor.h"
#include "machine.h"
#include "reference_bench.h"
#include "reference_hlb.h"

namespace {

using namespace loom;

struct Row {
  std::string name;
  double loom_ms = 0, torch_ms = 0;
  double generated_ms = 0;      // with the extern GEMM off (0: the row has no GEMM)
  double generated_target = 0;  // speed asked of generated code where the two differ
  double bytes = 0, flops = 0;  // what one call must move / compute (0: not reported)
  double target = 0;            // speed asked for (0: none)
  RunStats stats;               // of one warm call
  double tinygrad_ms = 0;        // 0: not given
  std::string note;
};

// tinygrad's times by workload, from bench/tinygrad_rows.py's output.
std::map<std::string, double> read_tinygrad_rows(const std::string &path) {
  std::map<std::string, double> ms;
  FILE *f = std::fopen(path.c_str(), "r");
  if (!f) {
    std::fprintf(stderr, "loom-bench-table: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  char name[128];
  double t = 0;
  while (std::fscanf(f, " tinygrad %127s %lf", name, &t) == 2) ms[name] = t;
  std::fclose(f);
  return ms;
}

struct Workload {
  std::string name;
  double bytes, flops, target;
  double generated_target;  // 0: no GEMM in it, one column
  std::function<void()> run;  // builds and realizes the result
};

// The hlb-like step at `batch`: loom's and libtorch's median step over `runs`
// steps after the first, and what the first loom step compiled.
// Steps 0..runs of the hlb-like step from the bench's weights: each step's ms
// and kernels compiled.
std::vector<double> hlb_steps(int64_t batch, bool channels_last, int runs, std::string &compiled, RunStats &stats) {
  bench::HlbBench b = bench::make_hlb_bench(batch, channels_last);
  std::vector<double> ms;
  for (int s = 0; s <= runs; ++s) {
    reset_run_stats();
    const auto t0 = std::chrono::steady_clock::now();
    bench::hlb_step(b.net, b.x, b.y);
    backends::synchronize();  // a GPU's step is done when its kernels are
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    compiled += (s ? ", " : "") + std::to_string(run_stats().kernels_compiled);
    stats = run_stats();
  }
  return ms;
}

Row hlb_row(int64_t batch, bool channels_last, int runs, int threads) {
  bench::HlbBench b = bench::make_hlb_bench(batch, channels_last);
  const reference::HlbResult torch = reference::train_hlb(b.torch_spec(runs + 1, threads));
  Row row;
  row.name = "hlb" + std::to_string(batch) + (channels_last ? "_cl" : "");
  std::string compiled, generated_compiled;
  const std::vector<double> ms = hlb_steps(batch, channels_last, runs, compiled, row.stats);
  const bool was = backends::set_extern_gemm(false);
  RunStats generated_stats;
  const std::vector<double> generated = hlb_steps(batch, channels_last, runs, generated_compiled, generated_stats);
  backends::set_extern_gemm(was);
  row.generated_ms = reference::median(std::vector<double>(generated.begin() + 1, generated.end()));
  row.generated_target = 1;
  char buf[96];
  std::snprintf(buf, sizeof buf, "first step %.0f ms; kernels compiled per step: ", ms[0]);
  row.note = buf + compiled;
  row.loom_ms = reference::median(std::vector<double>(ms.begin() + 1, ms.end()));
  row.torch_ms = reference::median(std::vector<double>(torch.step_ms.begin() + 1, torch.step_ms.end()));
  row.target = 1;
  return row;
}

}  // namespace

int main(int argc, char **argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::vector<std::string> wanted;
  std::map<std::string, double> tinygrad;
  for (int i = 3; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg.rfind("--tinygrad=", 0) == 0) tinygrad = read_tinygrad_rows(arg.substr(11));
    else wanted.push_back(arg);
  }
  auto want = [&](const std::string &n) { return wanted.empty() || std::find(wanted.begin(), wanted.end(), n) != wanted.end(); };

  Tensor::manual_seed(0);
  const int64_t n = int64_t{1} << 24;
  const double mib64 = 4.0 * static_cast<double>(n);
  Tensor a, b, c, sq, cx, cw, cg, cxl, cwl, cgl, bnx, bng, bxl, bgl, bnw, bnb;
  const double mib_bn = 4.0 * 64 * 64 * 32 * 32;
  std::map<int64_t, std::pair<Tensor, Tensor>> mats;
  std::vector<Workload> work{
      {"chain", 4 * mib64, 0, 8, 0, [&] { ((a * b + c).relu() * 0.5).exp().sub(a).sigmoid().realize(); }},
      {"neg", 2 * mib64, 0, 1, 0, [&] { a.neg().realize(); }},
      {"clone", 2 * mib64, 0, 1, 0, [&] { a.mul(1.0).realize(); }},
      {"sum_dim1", mib64, 0, 1, 0, [&] { sq.sum({1}).realize(); }},
      {"sum_dim0", mib64, 0, 1, 0, [&] { sq.sum({0}).realize(); }},
      {"sum_all", mib64, 0, 1, 0, [&] { sq.sum().realize(); }},
  };
  for (int64_t m : {512, 1024, 2048})
    work.push_back({"matmul" + std::to_string(m), 0, 2.0 * m * m * m, 0.95, 0.5,
                    [&, m] { mats[m].first.matmul(mats[m].second).realize(); }});
  const double conv_flops = 2.0 * 64 * 256 * 16 * 16 * 64 * 9;
  // Each row also in channels_last (inputs, weights and upstream gradients stored N, H, W, C).
  for (bool cl : {false, true}) {
    const std::string suffix = cl ? "_cl" : "";
    work.push_back({"conv_fwd" + suffix, 0, conv_flops, 0.9, 0.5,
                    [&, cl] { nn::conv2d(cl ? cxl : cx, cl ? cwl : cw, std::nullopt, 1, 1).realize(); }});
    work.push_back({"conv_fwdbwd" + suffix, 0, 3 * conv_flops, 0.9, 0.5, [&, cl] {
                      Tensor xg = (cl ? cxl : cx).detach().requires_grad_(true),
                             wg = (cl ? cwl : cw).detach().requires_grad_(true);
                      auto grads = autograd::grad({nn::conv2d(xg, wg, std::nullopt, 1, 1)}, {xg, wg}, {cl ? cgl : cg});
                      realize_all(grads);
                    }});
    // Training-mode BatchNorm of (64, 64, 32, 32) and its input's, weight's and bias's gradients: x and the
    // upstream gradient read, the input's gradient written.
    work.push_back({"bn_fwdbwd" + suffix, 3 * mib_bn, 0, 1, 0, [&, cl] {
                      Tensor xg = (cl ? bxl : bnx).detach().requires_grad_(true),
                             wg = bnw.detach().requires_grad_(true), bg = bnb.detach().requires_grad_(true);
                      auto grads = autograd::grad({nn::batch_norm(xg, std::nullopt, std::nullopt, wg, bg, true)},
                                                  {xg, wg, bg}, {cl ? bgl : bng});
                      realize_all(grads);
                    }});
  }

  std::vector<std::string> names;
  for (auto &w : work)
    if (want(w.name)) names.push_back(w.name);
  std::map<std::string, double> torch_ms;
  for (auto &t : reference::time_torch_table(runs, threads, names)) torch_ms[t.name] = t.ms;

  std::printf("loom-bench-table: %s, %d runs, libtorch at %d threads\n", bench::cpu_model().c_str(), runs, threads);
  const double copy_gbs = bench::copy_bandwidth_gbs(threads);
  std::printf("memcpy between preallocated 64 MiB buffers, %d threads: %.1f GB/s (read + write)\n", threads, copy_gbs);
  std::fflush(stdout);

  std::vector<Row> rows;
  a = Tensor::randn({n}).realize();
  b = Tensor::randn({n}).realize();
  c = Tensor::randn({n}).realize();
  sq = Tensor::randn({4096, 4096}).realize();
  cx = Tensor::randn({64, 64, 16, 16}).realize();
  cw = Tensor::randn({256, 64, 3, 3}).realize();
  cg = Tensor::randn({64, 256, 16, 16}).realize();
  bnx = Tensor::randn({64, 64, 32, 32}).realize();
  bng = Tensor::randn({64, 64, 32, 32}).realize();
  bnw = Tensor::rand({64}).realize();
  bnb = Tensor::randn({64}).realize();
  // The same values stored channels_last.
  const auto channels_last = [](const Tensor &t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}).realize(); };
  cxl = channels_last(cx);
  cwl = channels_last(cw);
  cgl = channels_last(cg);
  bxl = channels_last(bnx);
  bgl = channels_last(bng);
  for (int64_t m : {512, 1024, 2048})
    if (want("matmul" + std::to_string(m))) mats[m] = {Tensor::randn({m, m}).realize(), Tensor::randn({m, m}).realize()};
  for (auto &w : work) {
    if (!want(w.name)) continue;
    Row r;
    r.name = w.name;
    const std::function<void()> run = [&] {
      w.run();
      backends::synchronize();
    };
    r.loom_ms = reference::median_ms(runs, run);
    if (w.generated_target > 0) {
      const bool was = backends::set_extern_gemm(false);
      r.generated_ms = reference::median_ms(runs, run);
      r.generated_target = w.generated_target;
      backends::set_extern_gemm(was);
    }
    reset_run_stats();
    w.run();
    r.stats = run_stats();
    r.torch_ms = torch_ms[w.name];
    r.bytes = w.bytes;
    r.flops = w.flops;
    r.target = w.target;
    if (w.name == "chain") {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.0f%% of memcpy bandwidth", 100 * w.bytes / (r.loom_ms * 1e6) / copy_gbs);
      r.note = buf;
    }
    rows.push_back(r);
  }
  a = b = c = sq = cx = cw = cg = cxl = cwl = cgl = bnx = bng = bxl = bgl = bnw = bnb = Tensor();
  mats.clear();
  for (int64_t batch : {64, 256})
    for (bool cl : {false, true})
      if (want("hlb" + std::to_string(batch) + (cl ? "_cl" : ""))) rows.push_back(hlb_row(batch, cl, runs, threads));
  if (want("index")) {
    std::map<std::string, double> t;
    for (auto &o : reference::time_torch_ops(runs, threads)) t[o.name] = o.ms;
    for (auto &[name, ms] : bench::time_loom_ops(runs)) {
      Row r;
      r.name = "index:" + name;
      r.loom_ms = ms;
      r.torch_ms = t[name];
      r.target = name == "row_write" ? 1.0 / 3 : 0;
      rows.push_back(r);
    }
  }

  for (Row &r : rows)
    if (auto it = tinygrad.find(r.name); it != tinygrad.end()) r.tinygrad_ms = it->second;
  const bool tg = !tinygrad.empty();
  std::printf("\n| workload | loom ms | libtorch ms | speed | target | generated ms | speed | target | %sloom rate | kernels | work | note |\n",
              tg ? "tinygrad ms | loom speed vs tinygrad (target 10x) | " : "");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|%s\n", tg ? "---|---|" : "");
  for (const Row &r : rows) {
    char rate[32] = "", tgt[16] = "", kern[24] = "", wk[24] = "", gen[64] = " |  | ";
    if (r.bytes > 0) std::snprintf(rate, sizeof rate, "%.1f GB/s", r.bytes / (r.loom_ms * 1e6));
    if (r.flops > 0) std::snprintf(rate, sizeof rate, "%.1f GFLOP/s", r.flops / (r.loom_ms * 1e6));
    if (r.target > 0)
      std::snprintf(tgt, sizeof tgt, "%.2f %s", r.target, r.torch_ms / r.loom_ms >= r.target ? "met" : "MISS");
    if (r.stats.kernels_run > 0) {
      std::snprintf(kern, sizeof kern, "%lld", static_cast<long long>(r.stats.kernels_run));
      std::snprintf(wk, sizeof wk, "%.3f",
                    static_cast<double>(r.stats.work) / static_cast<double>(std::max<int64_t>(1, r.stats.work_needed)));
    }
    if (r.generated_ms > 0)
      std::snprintf(gen, sizeof gen, "%.3f | %.2fx | %.2f %s", r.generated_ms, r.torch_ms / r.generated_ms,
                    r.generated_target, r.torch_ms / r.generated_ms >= r.generated_target ? "met" : "MISS");
    char tgcol[64] = "";
    if (tg && r.tinygrad_ms > 0)
      std::snprintf(tgcol, sizeof tgcol, "%.3f | %.2fx %s | ", r.tinygrad_ms, r.tinygrad_ms / r.loom_ms,
                    r.tinygrad_ms / r.loom_ms >= 10 ? "met" : "MISS");
    else if (tg)
      std::snprintf(tgcol, sizeof tgcol, " |  | ");
    std::printf("| %s | %.3f | %.3f | %.2fx | %s | %s | %s%s | %s | %s | %s |\n", r.name.c_str(), r.loom_ms, r.torch_ms,
                r.torch_ms / r.loom_ms, tgt, gen, tgcol, rate, kern, wk, r.note.c_str());
  }
  return 0;
}
