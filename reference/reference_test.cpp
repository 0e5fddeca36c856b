// The oracle checked against hand-computed values, so a conformance failure
// can be trusted to be the engine's. Uses no engine code: host tensors are
// built from raw bytes here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "reference.h"

namespace loom::reference {
namespace {

template <typename T>
HostTensor make(DType dt, const Shape &shape, const std::vector<T> &storage, std::vector<int64_t> strides = {},
                int64_t offset = 0) {
  HostTensor h;
  h.dtype = dt;
  h.shape = shape;
  if (strides.empty() && !shape.empty()) {
    strides.assign(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  }
  h.strides = strides;
  h.offset = offset;
  h.storage = std::make_shared<std::vector<uint8_t>>(storage.size() * sizeof(T));
  std::memcpy(h.storage->data(), storage.data(), storage.size() * sizeof(T));
  return h;
}

template <typename T>
std::vector<T> values(const HostTensor &h) {
  std::vector<T> out(h.storage->size() / sizeof(T));
  std::memcpy(out.data(), h.storage->data(), h.storage->size());
  return out;
}

TEST(Reference, AddBroadcastsAndPromotes) {
  const HostTensor a = make<float>(DType::Float32, {2, 2}, {1, 2, 3, 4});
  const HostTensor b = make<int64_t>(DType::Int64, {2}, {10, 20});
  const HostTensor r = run("add", {a, b});
  EXPECT_EQ(r.dtype, DType::Float32);
  EXPECT_EQ(r.shape, (Shape{2, 2}));
  EXPECT_EQ(values<float>(r), (std::vector<float>{11, 22, 13, 24}));
}

TEST(Reference, ScalarPromotionFollowsTorch) {
  const HostTensor a = make<int32_t>(DType::Int32, {3}, {1, 2, 3});
  const HostTensor f = run("add", {a}, Attrs().set_scalar("scalar", Scalar(2.5)));
  EXPECT_EQ(f.dtype, DType::Float32);
  EXPECT_EQ(values<float>(f), (std::vector<float>{3.5f, 4.5f, 5.5f}));
  const HostTensor i = run("mul", {a}, Attrs().set_scalar("scalar", Scalar(2)));
  EXPECT_EQ(i.dtype, DType::Int32);
  EXPECT_EQ(values<int32_t>(i), (std::vector<int32_t>{2, 4, 6}));
}

TEST(Reference, NegativeStridesReadReversed) {
  // storage 0..5, view (2, 3) with strides (-3, -1) from offset 5: [[5,4,3],[2,1,0]]
  const HostTensor a = make<float>(DType::Float32, {2, 3}, {0, 1, 2, 3, 4, 5}, {-3, -1}, 5);
  const HostTensor r = run("contiguous", {a});
  EXPECT_EQ(values<float>(r), (std::vector<float>{5, 4, 3, 2, 1, 0}));
}

TEST(Reference, BroadcastAndOffsetViews) {
  const HostTensor a = make<int64_t>(DType::Int64, {2, 3}, {7, 8, 9, 10}, {0, 1}, 1);
  EXPECT_EQ(values<int64_t>(run("contiguous", {a})), (std::vector<int64_t>{8, 9, 10, 8, 9, 10}));
}

TEST(Reference, SliceWithNegativeStepIsPythonSlicing) {
  const HostTensor a = make<int64_t>(DType::Int64, {6}, {0, 1, 2, 3, 4, 5});
  auto sl = [&](std::optional<int64_t> b, std::optional<int64_t> e, int64_t s) {
    Attrs at;
    at.set_int("dim", 0).set_int("step", s);
    if (b) at.set_int("start", *b);
    if (e) at.set_int("stop", *e);
    return values<int64_t>(run("slice", {a}, at));
  };
  EXPECT_EQ(sl(std::nullopt, std::nullopt, -2), (std::vector<int64_t>{5, 3, 1}));  // x[::-2]
  EXPECT_EQ(sl(4, 0, -1), (std::vector<int64_t>{4, 3, 2, 1}));                      // x[4:0:-1]
  EXPECT_EQ(sl(-2, std::nullopt, -3), (std::vector<int64_t>{4, 1}));                // x[-2::-3]
  EXPECT_EQ(sl(1, 100, 2), (std::vector<int64_t>{1, 3, 5}));                        // x[1:100:2]
  EXPECT_EQ(sl(3, 1, 1), (std::vector<int64_t>{}));                                 // x[3:1]
  EXPECT_THROW(sl(0, 1, 0), std::runtime_error);
}

TEST(Reference, ReductionsWithDimsAndKeepdim) {
  const HostTensor a = make<int32_t>(DType::Int32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const HostTensor s = run("sum", {a}, Attrs().set_ints("dims", {1}).set_bool("keepdim", true));
  EXPECT_EQ(s.dtype, DType::Int64);
  EXPECT_EQ(s.shape, (Shape{2, 1}));
  EXPECT_EQ(values<int64_t>(s), (std::vector<int64_t>{6, 15}));
  const HostTensor p = run("prod", {a}, Attrs().set_ints("dims", {0, -1}));
  EXPECT_EQ(p.shape, Shape{});
  EXPECT_EQ(values<int64_t>(p), (std::vector<int64_t>{720}));
  const HostTensor am = run("argmax", {a}, Attrs().set_int("dim", 0));
  EXPECT_EQ(values<int64_t>(am), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(run("mean", {a}), std::runtime_error);  // torch: floating only
}

TEST(Reference, HalfOpsWithoutTorchKernelsRunInFloat32) {
  // exp has no float16 CPU kernel in torch 1.13; 0x3C00 = 1.0, result e rounds to 0x4170.
  const HostTensor a = make<uint16_t>(DType::Float16, {1}, {0x3C00});
  const HostTensor r = run("exp", {a});
  EXPECT_EQ(r.dtype, DType::Float16);
  EXPECT_EQ(values<uint16_t>(r), (std::vector<uint16_t>{0x4170}));
}

TEST(Reference, MovementOps) {
  const HostTensor a = make<float>(DType::Float32, {2, 2}, {1, 2, 3, 4});
  const HostTensor p = run("pad", {a}, Attrs().set_ints("pad", {0, 1, 1, 0}).set_scalar("value", Scalar(9.0)));
  EXPECT_EQ(p.shape, (Shape{3, 3}));
  EXPECT_EQ(values<float>(p), (std::vector<float>{9, 1, 2, 9, 3, 4, 9, 9, 9}));
  const HostTensor s = run("shrink", {a}, Attrs().set_ints("bounds", {1, 2, 0, 2}));
  EXPECT_EQ(values<float>(s), (std::vector<float>{3, 4}));
  const HostTensor t = run("transpose", {a}, Attrs().set_int("dim0", 0).set_int("dim1", 1));
  EXPECT_EQ(values<float>(t), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_THROW(run("reshape", {a}, Attrs().set_ints("shape", {3})), std::runtime_error);
}

TEST(Reference, AsStridedAfterFlipSeesAFreshStorage) {
  const HostTensor a = make<int64_t>(DType::Int64, {4}, {0, 1, 2, 3, 99, 99});
  const std::vector<ViewStep> steps = {
      {"flip", Attrs().set_ints("dims", {0})},
      {"as_strided", Attrs().set_ints("size", {2, 2}).set_ints("stride", {1, 1}).set_int("offset", 1)}};
  EXPECT_EQ(values<int64_t>(apply_view_chain(a, steps)), (std::vector<int64_t>{2, 1, 1, 0}));
  const ViewInfo v = view_chain_info(a, {steps[0]});
  EXPECT_EQ(v.storage_numel, 4);
  // A plain view keeps the whole base storage.
  EXPECT_EQ(view_chain_info(a, {{"expand", Attrs().set_ints("shape", {3, 4})}}).storage_numel, 6);
}

TEST(Reference, CreationOps) {
  const HostTensor f = run("full", {}, Attrs().set_ints("shape", {2}).set_scalar("value", Scalar(3)));
  EXPECT_EQ(f.dtype, DType::Int64);
  const HostTensor r = run("arange", {}, Attrs().set_scalar("end", Scalar(2.0)));
  EXPECT_EQ(r.dtype, DType::Float32);
  EXPECT_EQ(values<float>(r), (std::vector<float>{0, 1}));
}

TEST(Reference, TorchErrorsBecomeRuntimeErrorsWithTorchsMessage) {
  const HostTensor a = make<float>(DType::Float32, {2, 3}, {0, 0, 0, 0, 0, 0});
  const HostTensor b = make<float>(DType::Float32, {4}, {0, 0, 0, 0});
  try {
    run("add", {a, b});
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("must match"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(Reference, AttrsPrint) {
  EXPECT_EQ(Attrs().set_ints("dims", {0, 1}).set_bool("keepdim", true).str(), "dims=[0, 1] keepdim=true");
  EXPECT_EQ(scalar_str(Scalar(2.0)), "2.0");
  EXPECT_EQ(scalar_str(Scalar(2)), "2");
}

}  // namespace
}  // namespace loom::reference
