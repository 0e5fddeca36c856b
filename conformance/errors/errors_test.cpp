// Bad input raises loom::Error (or the subclass torch's exception maps to)
// whose message names the offending shapes, dtypes and dims. Messages are
// checked by substring, never whole. Nothing here may crash the process.
#include <gtest/gtest.h>

#include "errors/expect_error.h"

namespace loom {
namespace {

Tensor f32(const Shape &s) { return Tensor::zeros(s, DType::Float32); }

TEST(Errors, BroadcastMismatchNamesBothShapes) {
  expect_error([] { f32({2, 3}).add(f32({4})).to_host(); }, {"(2, 3)", "(4,)"});
  expect_error([] { f32({2, 3}).mul(f32({3, 2})).to_host(); }, {"(2, 3)", "(3, 2)"});
  expect_error([] { f32({2, 1}).gt(f32({1, 2})).where(f32({3}), f32({2, 2})).to_host(); }, {"(3,)"});
}

TEST(Errors, InvalidReshapeNamesBothShapes) {
  expect_error([] { f32({2, 3}).reshape({4, 2}).to_host(); }, {"(2, 3)", "(4, 2)"});
  expect_error([] { f32({2, 3}).reshape({-1, -1}).to_host(); }, {"-1"});
  expect_error([] { f32({2, 3}).reshape({-1, 4}).to_host(); }, {"(2, 3)"});
}

TEST(Errors, DimOutOfRangeIsAnIndexError) {
  expect_error<IndexError>([] { f32({2, 3}).sum({5}).to_host(); }, {"5"});
  expect_error<IndexError>([] { f32({2, 3}).amax({-3}).to_host(); }, {"-3"});
  expect_error<IndexError>([] { f32({2, 3}).argmax(2).to_host(); }, {"2"});
  expect_error<IndexError>([] { f32({2, 3}).transpose(0, 2).to_host(); }, {"2"});
  expect_error<IndexError>([] { f32({2, 3}).flip({3}).to_host(); }, {"3"});
  expect_error<IndexError>([] { f32({2, 3}).slice(2, 0, 1).to_host(); }, {"2"});
}

TEST(Errors, BadDimListsNameTheDims) {
  expect_error([] { f32({2, 3}).sum({0, 0}).to_host(); }, {"0"});
  expect_error([] { f32({2, 3}).permute({0, 0}).to_host(); }, {"(0, 0)"});
  expect_error([] { f32({2, 3}).permute({0}).to_host(); }, {"(2, 3)"});
}

TEST(Errors, AsStridedOutsideTheStorage) {
  // 6 elements cannot hold a (3, 3) row-major view.
  expect_error([] { Tensor::arange(6).as_strided({3, 3}, {3, 1}, 0).to_host(); }, {"(3, 3)", "6"});
  expect_error([] { Tensor::arange(6).as_strided({2}, {1}, 5).to_host(); }, {"6"});
  expect_error([] { Tensor::arange(6).as_strided({2}, {1}, -1).to_host(); }, {"-1"});
}

TEST(Errors, AsStridedNegativeStride) {
  expect_error([] { Tensor::arange(6).as_strided({2}, {-1}, 5).to_host(); }, {"-1"});
}

TEST(Errors, UnsupportedDTypeNamesTheDType) {
  expect_error([] { Tensor::zeros({2}, DType::Int64).mean().to_host(); }, {"int64"});
  expect_error([] { Tensor::zeros({2}, DType::Bool).neg().to_host(); }, {"bool"});
  expect_error([] { Tensor::zeros({2}, DType::Bool).sub(Tensor::zeros({2}, DType::Bool)).to_host(); }, {"bool"});
  expect_error([] { Tensor::zeros({2}, DType::Int32).gelu().to_host(); }, {"int32"});
  expect_error([] { Tensor::rand({2}, DType::Int64).to_host(); }, {"int64"});
}

TEST(Errors, BadPadAndShrinkBounds) {
  expect_error([] { f32({2, 3}).pad({{0, 0}, {-1, 0}}).to_host(); }, {"-1"});
  expect_error([] { f32({2, 3}).shrink({{0, 2}, {0, 4}}).to_host(); }, {"(2, 3)"});
  expect_error([] { f32({2, 3}).shrink({{1, 0}, {0, 3}}).to_host(); }, {"(2, 3)"});
  expect_error([] { f32({2, 3}).shrink({{0, 2}}).to_host(); }, {"(2, 3)"});
}

TEST(Errors, BadExpandAndSlice) {
  expect_error([] { f32({2, 3}).expand({4, 3}).to_host(); }, {"(2, 3)", "(4, 3)"});
  expect_error([] { f32({2, 3}).slice(1, 0, 3, 0).to_host(); }, {"step"});
}

TEST(Errors, EmptyReductionsWithoutIdentity) {
  expect_error([] { f32({0, 3}).max().to_host(); }, {"(0, 3)"});
  expect_error([] { f32({0, 3}).argmin().to_host(); }, {"(0, 3)"});
  expect_error([] { f32({0, 3}).amax({0}).to_host(); }, {"0"});
}

// Errors leave live tensors intact: the same buffers still compute correctly afterwards.
TEST(Errors, ErrorsDoNotCorruptLiveBuffers) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  x.realize();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(x.add(f32({4})).to_host(), Error);
    EXPECT_THROW(x.reshape({4, 2}).to_host(), Error);
    EXPECT_THROW(x.as_strided({3, 3}, {3, 1}, 0).to_host(), Error);
  }
  const HostTensor h = x.add(Scalar(1)).sum().to_host();
  EXPECT_EQ(h.get(0), 27);
}

TEST(Errors, IntegerDivisionByZeroRaises) {
  const Tensor a = Tensor::from_vector({7, -7}, {2}, DType::Int32);
  const Tensor b = Tensor::from_vector({2, 0}, {2}, DType::Int32);
  expect_error([&] { a.floor_divide(b).to_host(); }, {"floor_divide", "ZeroDivisionError"});
  expect_error([&] { a.remainder(b).to_host(); }, {"remainder", "ZeroDivisionError"});
}

TEST(Errors, BitwiseOpsRejectFloats) {
  expect_error<TypeError>([] { f32({2}).bitwise_and(f32({2})).to_host(); }, {"bitwise_and", "float32"});
  expect_error<TypeError>([] { f32({2}).bitwise_not().to_host(); }, {"bitwise_not", "float32"});
}

TEST(Errors, RandomRangesAreChecked) {
  expect_error([] { Tensor::randint(3, 3, {2}).to_host(); }, {"randint", "from=3", "to=3"});
  expect_error([] { Tensor t = f32({2}); t.uniform_(2, 1); }, {"uniform_", "from=2"});
  expect_error([] { Tensor t = f32({2}); t.normal_(0, -1); }, {"normal_", "std"});
  expect_error([] { Tensor::randperm(-1).to_host(); }, {"randperm", "-1"});
  expect_error([] { Tensor::rand({2, -1}).to_host(); }, {"rand", "negative dimension", "(2, -1)"});
  expect_error([] { Tensor::randn({-3}).to_host(); }, {"randn", "negative dimension"});
  expect_error([] { Tensor::randint(0, 4, {-1, 2}).to_host(); }, {"randint", "negative dimension"});
}

TEST(Errors, InPlaceWriteThroughABroadcastViewRaises) {
  expect_error([] { f32({3}).expand({2, 3}).assign(f32({2, 3})); }, {"more than one element", "(2, 3)"});
}

}  // namespace
}  // namespace loom
