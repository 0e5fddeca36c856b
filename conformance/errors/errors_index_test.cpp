// Bad input to the indexing, shaping, scan and statistics ops (and class-index loss targets) raises a clear loom::Error, as torch raises.
#include <gtest/gtest.h>

#include "errors/expect_error.h"
#include "loom/nn.h"

namespace loom {
namespace {

Tensor f32(const Shape &s) { return Tensor::zeros(s); }
Tensor idx(const std::vector<double> &v, const Shape &s) { return Tensor::from_vector(v, s, DType::Int64); }

TEST(ErrorsIndex, GatherIndexOutOfRange) {
  expect_error<IndexError>([] { f32({2, 3}).gather(1, idx({0, 5}, {1, 2})).realize(); },
                           {"gather", "index 5", "dimension 1", "size 3"});
  expect_error<IndexError>([] { f32({2, 3}).gather(0, idx({-1}, {1, 1})).realize(); }, {"gather", "index -1"});
}

TEST(ErrorsIndex, GatherShapesAndDtype) {
  expect_error([] { f32({2, 3}).gather(1, idx({0, 0, 0}, {3})).realize(); },
               {"gather", "same number of dimensions"});
  expect_error([] { f32({2, 3}).gather(1, idx({0, 0, 0, 0, 0, 0}, {3, 2})).realize(); },
               {"gather", "Size does not match at dimension 0"});
  expect_error([] { f32({2, 3}).gather(1, Tensor::zeros({2, 3}, DType::Int32)).realize(); }, {"gather", "int64", "int32"});
  expect_error<IndexError>([] { f32({2, 3}).gather(2, idx({0}, {1, 1})).realize(); }, {"gather", "2"});
}

TEST(ErrorsIndex, ScatterChecks) {
  expect_error<IndexError>([] { f32({2, 3}).scatter(0, idx({2}, {1, 1}), f32({1, 1})).realize(); },
                           {"scatter", "index 2", "dimension 0", "size 2"});
  expect_error([] { f32({2, 3}).scatter(0, idx({0}, {1, 1}), Tensor::zeros({1, 1}, DType::Float64)).realize(); },
               {"scatter", "float32", "float64"});
  expect_error([] { f32({2, 3}).scatter_add(0, idx({0, 0}, {1, 2}), f32({1, 1})).realize(); },
               {"scatter_add", "smaller than src"});
}

TEST(ErrorsIndex, IndexSelectChecks) {
  expect_error<IndexError>([] { f32({2, 3}).index_select(1, idx({3}, {1})).realize(); },
                           {"index_select", "index out of range"});
  expect_error<IndexError>([] { f32({2, 3}).index_select(1, idx({0, 1}, {1, 2})).realize(); },
                           {"index_select", "vector"});
  expect_error([] { f32({2, 3}).index_select(1, f32({1})).realize(); }, {"index_select", "float32"});
  expect_error<IndexError>([] { f32({2, 3}).index(0, idx({-3}, {1})).realize(); },
                           {"index -3", "dimension 0", "size 2"});
  expect_error<IndexError>([] { f32({2, 3, 4}).index(1, Tensor::ones({3, 3}, DType::Bool)).realize(); },
                           {"shape of the mask [3, 3] at index 1", "[2, 3, 4] at index 2"});
  expect_error<IndexError>([] { f32({2, 3}).index(1, Tensor::ones({3, 1}, DType::Bool)).realize(); },
                           {"too many indices", "dimension 2"});
  expect_error<IndexError>([] { f32({2, 3}).index(0, f32({1})).realize(); }, {"index()", "float32"});
}

TEST(ErrorsIndex, MaskAndOneHot) {
  expect_error([] { f32({2}).masked_fill(Tensor::ones({2}, DType::Float32), 1).realize(); }, {"masked_fill", "float32"});
  expect_error([] { f32({2}).masked_fill(idx({0, 2}, {2}), 1).realize(); }, {"masked_fill", "0 and 1"});
  expect_error([] { Tensor::zeros({2}, DType::UInt8).masked_fill(Tensor::ones({2}, DType::Bool), 300).realize(); },
               {"masked_fill", "300", "uint8", "overflow"});
  expect_error([] { f32({2}).masked_fill(Tensor::ones({2}, DType::Bool), 1e40).realize(); },
               {"masked_fill", "float32", "overflow"});
  expect_error([] { Tensor::zeros({2}, DType::BFloat16).masked_fill(Tensor::ones({2}, DType::Bool), 1e39).realize(); },
               {"masked_fill", "bfloat16", "overflow"});
  expect_error([] { f32({2}).masked_select(Tensor::ones({3}, DType::Bool)).realize(); }, {"masked_select"});
  expect_error([] { idx({0, 3}, {2}).one_hot(3).realize(); }, {"one_hot", "smaller than num_classes"});
  expect_error([] { idx({-1}, {1}).one_hot(3).realize(); }, {"one_hot", "non-negative"});
  expect_error([] { f32({2}).one_hot(3).realize(); }, {"one_hot", "float32"});
  expect_error([] { Tensor::zeros({0}, DType::Int64).one_hot().realize(); }, {"one_hot", "empty"});
}

TEST(ErrorsIndex, CatAndStackShapes) {
  expect_error([] { Tensor::cat({f32({2, 3}), f32({3, 3})}, 1).realize(); },
               {"cat", "Sizes of tensors must match except in dimension 1", "Expected size 2 but got size 3",
                "tensor number 1"});
  expect_error([] { Tensor::cat({f32({2, 3}), f32({2, 3, 1})}, 0).realize(); }, {"cat", "same number of dimensions"});
  expect_error([] { Tensor::cat({f32({}), f32({})}, 0).realize(); }, {"cat", "zero-dimensional"});
  expect_error([] { Tensor::cat({}, 0).realize(); }, {"cat", "non-empty"});
  expect_error<IndexError>([] { Tensor::cat({f32({2}), f32({2})}, 1).realize(); }, {"cat", "1"});
  expect_error([] { Tensor::stack({f32({2, 3}), f32({2, 4})}, 0).realize(); },
               {"stack", "equal size", "[2, 3] at entry 0", "[2, 4] at entry 1"});
}

TEST(ErrorsIndex, SplitChunkUnbind) {
  expect_error([] { f32({5}).split(std::vector<int64_t>{2, 2}, 0); }, {"split_with_sizes", "sum exactly to 5", "[2, 2]"});
  expect_error([] { f32({5}).split(0, 0); }, {"split", "split_size can only be 0", "5"});
  expect_error([] { f32({5}).chunk(0, 0); }, {"chunk", "greater than 0", "0"});
  expect_error<IndexError>([] { f32({}).unbind(0); }, {"unbind", "no dimensions"});
  expect_error<IndexError>([] { f32({2, 3}).split(1, 2); }, {"split", "2"});
}

TEST(ErrorsIndex, ShapingArguments) {
  expect_error<IndexError>([] { f32({2, 3}).unsqueeze(3).realize(); }, {"unsqueeze", "3"});
  expect_error([] { f32({2, 3, 4}).flatten(2, 1).realize(); }, {"flatten", "start_dim cannot come after end_dim"});
  expect_error([] { f32({2, 6}).unflatten(1, {4, -1}).realize(); }, {"unflatten", "[4, -1]", "6"});
  expect_error([] { f32({2, 6}).unflatten(1, {-1, -1}).realize(); }, {"unflatten", "only one dimension"});
  expect_error([] { f32({2, 3}).repeat({2}).realize(); }, {"repeat", "can not be smaller"});
  expect_error([] { f32({2, 3}).roll({1, 2}, {0}).realize(); }, {"roll", "shifts and dimensions must align"});
  expect_error([] { f32({3}).tril().realize(); }, {"tril", "at least 2 dimensions", "(3,)"});
  expect_error([] { f32({2, 3}).unfold(1, 4, 1).realize(); }, {"unfold", "maximum size", "3", "4"});
  expect_error([] { f32({2, 3}).unfold(1, 2, 0).realize(); }, {"unfold", "step", "> 0"});
  expect_error([] { f32({1, 2, 3}).pad_mode({{3, 0}}, "reflect").realize(); }, {"pad_mode", "Padding size", "(3, 0)"});
  expect_error([] { f32({1, 2, 3}).pad_mode({{1, 1}}, "circular").realize(); }, {"pad_mode", "circular"});
  expect_error([] { f32({3}).pad_mode({{1, 1}}, "replicate").realize(); }, {"pad_mode", "2-d or 3-d"});
  // An empty leading dim is a batch only when the input has one; 1-d/2-d reflect allows it either way.
  expect_error([] { f32({0, 3}).pad_mode({{1, 1}}, "replicate").realize(); }, {"pad_mode", "0 batch size"});
  EXPECT_EQ(f32({0, 3}).pad_mode({{1, 1}}, "reflect").shape(), (Shape{0, 5}));
  EXPECT_EQ(f32({0, 2, 3}).pad_mode({{1, 1}}, "replicate").shape(), (Shape{0, 2, 5}));
}

TEST(ErrorsIndex, OrderAndScans) {
  expect_error<IndexError>([] { f32({2, 3}).cumsum(2).realize(); }, {"cumsum", "2"});
  expect_error<IndexError>([] { f32({2, 3}).sort(-3).first.realize(); }, {"sort", "-3"});
  expect_error([] { f32({2, 3}).topk(4, 1).first.realize(); }, {"topk", "k out of range", "4"});
  expect_error<IndexError>([] { f32({2, 0}).max(1).first.realize(); }, {"max", "non-zero size"});
  expect_error<IndexError>([] { f32({2, 0}).min(1).second.realize(); }, {"min", "non-zero size"});
}

TEST(ErrorsIndex, Statistics) {
  expect_error([] { Tensor::zeros({3}, DType::Int32).var().realize(); }, {"var", "floating point", "int32"});
  expect_error([] { Tensor::zeros({3}, DType::Int64).std().realize(); }, {"std", "floating point", "int64"});
  expect_error<IndexError>([] { f32({2, 3}).var({2}).realize(); }, {"var", "2"});
  expect_error([] { f32({2, 3, 4}).cov().realize(); }, {"cov", "two or fewer dimensions", "3"});
  expect_error([] { Tensor::zeros({2, 3}, DType::Bool).cov().realize(); }, {"cov", "bool"});
}

// Class indices outside [0, C) that are not ignore_index: torch's IndexError.
TEST(ErrorsIndex, LossTargetsOutOfRange) {
  const Tensor logits = f32({3, 4});
  expect_error<IndexError>([&] { nn::cross_entropy(logits, idx({0, 4, 1}, {3})).realize(); },
                           {"cross_entropy", "Target 4 is out of bounds"});
  expect_error<IndexError>([&] { nn::nll_loss(logits, idx({0, -1, 1}, {3})).realize(); },
                           {"nll_loss", "Target -1 is out of bounds"});
  expect_error<IndexError>([&] { nn::cross_entropy(f32({2, 4, 3}), idx({0, 1, 2, 3, 4, 0}, {2, 3})).realize(); },
                           {"Target 4 is out of bounds"});
  // ignore_index is not a class, and may lie outside the range.
  EXPECT_NO_THROW(nn::cross_entropy(logits, idx({0, -100, 3}, {3})).realize());
  EXPECT_NO_THROW(nn::nll_loss(logits, idx({7, 1, 3}, {3}), std::nullopt, "mean", 7).realize());
}

}  // namespace
}  // namespace loom
