#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/tensor.h"
#include "parity/core/tensor_metadata.h"

namespace parity {
namespace {

TEST(Tensor, ZerosAllocatesCheckedAndZeroed) {
  Tensor t = Tensor::zeros(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.byte_size(), 24u);
  for (float v : t.span<float>()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
}

TEST(Tensor, UninitializedAllocatesCheckedAndRefusesStrings) {
  Tensor t = Tensor::uninitialized(DType::kFloat16, {3, 5});
  EXPECT_EQ(t.size(), 15);
  EXPECT_EQ(t.byte_size(), 30u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  EXPECT_THROW(Tensor::uninitialized(DType::kString, {2}), InternalError);
  EXPECT_THROW(Tensor::uninitialized(DType::kUndefined, {2}), InvalidInputError);
  EXPECT_THROW(Tensor::uninitialized(DType::kFloat32, {1000000, 1000000, 1000000, 1000000}), ResourceLimitError);
}

TEST(Tensor, RefusesAbsurdShapesBeforeAllocating) {
  EXPECT_THROW(Tensor::zeros(DType::kFloat32, {1000000, 1000000, 1000000, 1000000}), ResourceLimitError);
  EXPECT_THROW(Tensor::zeros(DType::kFloat32, {1000, 1000}, /*element_limit=*/1000), ResourceLimitError);
  EXPECT_THROW(Tensor::zeros(DType::kFloat32, {2, -1}), InvalidInputError);
}

TEST(Tensor, ViewsShareBytesAndCopiesDoNot) {
  Tensor t = Tensor::zeros(DType::kInt32, {4});
  t.mutable_data<int32_t>()[2] = 7;
  TensorView v = t.view();
  EXPECT_EQ(v.data<int32_t>()[2], 7);
  Tensor copy = Tensor::copy_of(v);
  t.mutable_data<int32_t>()[2] = 8;
  EXPECT_EQ(copy.data<int32_t>()[2], 7);
  EXPECT_EQ(v.data<int32_t>()[2], 8);
  EXPECT_FALSE(identical(copy, t));
  copy.mutable_data<int32_t>()[2] = 8;
  EXPECT_TRUE(identical(copy, t));
}

TEST(Tensor, FromBytesChecksTheSize) {
  float values[3] = {1, 2, 3};
  Tensor t = Tensor::from_bytes(DType::kFloat32, {3}, values, sizeof values);
  EXPECT_EQ(t.data<float>()[1], 2.0f);
  EXPECT_THROW(Tensor::from_bytes(DType::kFloat32, {4}, values, sizeof values), InvalidInputError);
}

TEST(Tensor, StringsAreOwnedObjects) {
  Tensor t = Tensor::zeros(DType::kString, {2});
  t.mutable_data<std::string>()[0] = "hello";
  Tensor c = Tensor::copy_of(t);
  EXPECT_EQ(c.data<std::string>()[0], "hello");
  EXPECT_TRUE(identical(c, t));
}

TEST(Tensor, ReshapeKeepsBytesAndChecksCount) {
  Tensor t = Tensor::zeros(DType::kFloat32, {2, 3});
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_THROW(t.reshaped({4}), InvalidInputError);
}

TEST(TensorMetadata, PrintsLikePolygraphy) {
  TensorMetadata m;
  m.add("x", DType::kFloat32, std::vector<Dim>{Dim::named("batch"), Dim::fixed(3), Dim::unknown()});
  m.add("y", DType::kInt64, std::vector<Dim>{});
  m.add("z", DType::kBool, std::nullopt);
  m.add("w", DType::kFloat16, std::vector<Dim>{Dim::fixed(5)});
  EXPECT_EQ(m.to_string(),
            "{x [dtype=float32, shape=('batch', 3, None)],\n y [dtype=int64, shape=()],\n"
            " z [dtype=bool, shape=None],\n w [dtype=float16, shape=(5,)]}");
}

TEST(TensorMetadata, KeepsOrderAndReplacesInPlace) {
  TensorMetadata m;
  m.add("b", DType::kFloat32, std::nullopt).add("a", DType::kInt32, std::nullopt);
  m.add("b", DType::kInt8, std::nullopt);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].first, "b");
  EXPECT_EQ(m[0].second.dtype, DType::kInt8);
  EXPECT_EQ(m.find("a")->dtype, DType::kInt32);
  EXPECT_EQ(m.find("c"), nullptr);
}

TEST(Errors, ContextIsPrepended) {
  try {
    with_context("model.onnx", [] { with_context("node 'conv'", [] { raise<InvalidInputError>("bad {}", 1); }); });
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_STREQ(e.what(), "model.onnx: node 'conv': bad 1");
    EXPECT_EQ(e.message(), "bad 1");
  }
}

}  // namespace
}  // namespace parity
