#include "corpus.h"

#include "layouts.h"
#include "loom/autograd.h"
#include "loom/nn.h"
#include "op_table.h"
#include "torch_views.h"

namespace loom::replay {

namespace {

using conformance::Layout;
using conformance::OpEntry;
using conformance::Rng;

Tensor iota(const Shape &shape, DType dt = DType::Float32, double scale = 0.25, double shift = -1) {
  std::vector<double> v;
  for (int64_t i = 0, n = conformance::shape_numel(shape); i < n; i++) v.push_back(i * scale + shift);
  return Tensor::from_vector(v, shape, dt);
}

DType preferred_dtype(const OpEntry &op) {
  for (DType d : op.dtypes)
    if (d == DType::Float32) return d;
  return op.dtypes.empty() ? DType::Float32 : op.dtypes.front();
}

// One fixed case of an op-table entry: shape (3, 4), the entry's own attribute
// generator and value domains, a seeded RNG, so the program never changes.
Program op_program(const OpEntry &op, Layout layout) {
  std::string name = "op." + op.name + "." + conformance::layout_name(layout);
  return {name, op.name, [&op, layout] {
            Rng rng(20261122);
            DType dt = preferred_dtype(op);
            Shape shape{3, 4};
            auto in_dtypes = op.inputs_for(dt);
            std::vector<conformance::LayoutInput> ins;
            conformance::CaseContext ctx{dt, shape, {}, {}};
            int arity = op.shapes == conformance::ShapeKind::None ? 0 : op.arity;
            for (int i = 0; i < arity; i++) {
              ins.push_back(conformance::plan_layout(layout, shape, in_dtypes[i], rng));
              ctx.inputs.push_back(ins.back().view);
              ctx.torch_views.push_back(conformance::torch_view_info(ins.back().base, ins.back().steps));
            }
            reference::Attrs attrs = op.attrs ? op.attrs(ctx, rng) : reference::Attrs();
            std::vector<Tensor> ts;
            for (size_t i = 0; i < ins.size(); i++) {
              conformance::fill_storage(ins[i].base, op.domain(in_dtypes[i], static_cast<int>(i), attrs), rng);
              ts.push_back(conformance::build_engine(ins[i]));
            }
            Tensor::manual_seed(7);
            return std::vector<Tensor>{op.engine(ts, attrs)};
          }};
}

std::vector<Program> showcases() {
  return {
      {"fusion.elementwise_chain", "",
       [] {
         Tensor a = iota({4, 8}), b = iota({4, 8}, DType::Float32, 0.5), c = iota({8});
         return std::vector<Tensor>{((a + b) * c).exp().relu()};
       }},
      {"fusion.add_relu_sum", "", [] { return std::vector<Tensor>{(iota({4, 5}) + iota({4, 5}, DType::Float32, 2)).relu().sum()}; }},
      {"fusion.reduce_epilogue", "", [] { return std::vector<Tensor>{(iota({3, 8}).sum({1}) * 2 + 1).sqrt()}; }},
      {"fusion.permuted_prologue_reduce", "",
       [] { return std::vector<Tensor>{iota({6, 5}).permute({1, 0}).exp().sum({0})}; }},
      {"fusion.softmax", "",
       [] {
         Tensor x = iota({4, 6});
         Tensor e = (x - x.amax({1}, true)).exp();
         return std::vector<Tensor>{e / e.sum({1}, true)};
       }},
      {"fusion.two_outputs_share_input", "",
       [] {
         Tensor x = iota({5, 3});
         return std::vector<Tensor>{x.sum({0}), (x * x).amax({1})};
       }},
      {"movement.permute_step_slice_exp", "",
       [] { return std::vector<Tensor>{iota({6, 4}).permute({1, 0}).slice(0, std::nullopt, std::nullopt, 2).exp()}; }},
      {"movement.negative_step_slice", "",
       [] { return std::vector<Tensor>{iota({3, 7}).slice(1, std::nullopt, std::nullopt, -3).add(1)}; }},
      {"movement.pad_then_unmergeable_reshape", "",
       [] { return std::vector<Tensor>{iota({3, 4}).pad({{1, 0}, {0, 2}}, 0.5).permute({1, 0}).reshape({3, 8}).mul(2)}; }},
      {"movement.as_strided_windows", "",
       [] { return std::vector<Tensor>{iota({12}).as_strided({5, 4}, {2, 1}).sum({1})}; }},
      {"movement.broadcast_expand", "",
       [] { return std::vector<Tensor>{iota({3, 1}).expand({3, 5}) * iota({5})}; }},
      {"dtype.half_rounding_chain", "",
       [] {
         Tensor h = iota({16}, DType::Float16);
         return std::vector<Tensor>{(h * 3 + 1).div(7).sum(), h.cast(DType::BFloat16).exp()};
       }},
      // Matmuls of halves: on the CUDA target, tensor-core GEMMs.
      {"dtype.half_matmul", "",
       [] {
         Tensor a = iota({20, 24}, DType::Float16).contiguous(), b = iota({24, 40}, DType::Float16, 0.5).contiguous();
         return std::vector<Tensor>{a.matmul(b)};
       }},
      {"dtype.bfloat16_batched_matmul_transposed", "",
       [] {
         Tensor a = iota({2, 9, 16}, DType::BFloat16).contiguous(), b = iota({2, 12, 16}, DType::BFloat16).contiguous();
         return std::vector<Tensor>{a.matmul(b.transpose(-1, -2))};
       }},
      {"dtype.int_promotion", "",
       [] { return std::vector<Tensor>{iota({8}, DType::Int8, 1, -4) * iota({8}, DType::UInt8, 1, 0) + 2.5}; }},
      {"reduce.argmax_rows", "", [] { return std::vector<Tensor>{iota({4, 6}).sin().argmax(1)}; }},
      {"optimize.reduce_upcast_matmul", "",
       [] { return std::vector<Tensor>{iota({16, 12}).matmul(iota({12, 16}, DType::Float32, 0.5)).relu()}; }},
      // A padded 3x3 convolution's input and weight gradients.
      {"autograd.conv2d_3x3_gradients", "",
       [] {
         Tensor x = iota({2, 3, 6, 5}, DType::Float32, 0.01).requires_grad_();
         Tensor w = iota({4, 3, 3, 3}, DType::Float32, 0.02).requires_grad_();
         return autograd::grad({nn::conv2d(x, w, std::nullopt, 1, 1).sin().sum()}, {x, w});
       }},
  };
}

}  // namespace

const std::vector<Program> &corpus() {
  static const std::vector<Program> programs = [] {
    std::vector<Program> p = showcases();
    for (const OpEntry &op : conformance::op_table())
      for (Layout l : {Layout::Contiguous, Layout::Permuted})
        if (l == Layout::Contiguous || op.shapes != conformance::ShapeKind::None) p.push_back(op_program(op, l));
    return p;
  }();
  return programs;
}

}  // namespace loom::replay
