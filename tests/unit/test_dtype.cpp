#include <set>

#include <gtest/gtest.h>

#include "parity/core/dtype.h"
#include "parity/core/error.h"

namespace parity {
namespace {

TEST(DType, TableCoversEveryOnnxElementTypeInOrder) {
  auto all = all_dtypes();
  ASSERT_EQ(all.size(), 28u);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<int>(all[i].dtype), static_cast<int>(i + 1));
    EXPECT_EQ(dtype_from_onnx(static_cast<int32_t>(i + 1)), all[i].dtype);
    EXPECT_EQ(dtype_from_name(all[i].name), all[i].dtype);
    EXPECT_EQ(dtype_from_name(all[i].onnx_name), all[i].dtype);
    EXPECT_TRUE(names.insert(all[i].name).second) << "duplicate name " << all[i].name;
  }
}

TEST(DType, SizesMatchTheOnnxSpec) {
  EXPECT_EQ(storage_bytes(DType::kFloat32, 3), 12u);
  EXPECT_EQ(storage_bytes(DType::kFloat16, 3), 6u);
  EXPECT_EQ(storage_bytes(DType::kBFloat16, 1), 2u);
  EXPECT_EQ(storage_bytes(DType::kComplex128, 2), 32u);
  EXPECT_EQ(storage_bytes(DType::kBool, 5), 5u);
  EXPECT_EQ(storage_bytes(DType::kFloat8E5M2, 5), 5u);
  EXPECT_EQ(storage_bytes(DType::kInt4, 5), 3u);  // two per byte, rounded up
  EXPECT_EQ(storage_bytes(DType::kUInt2, 5), 2u);  // four per byte
  EXPECT_EQ(storage_bytes(DType::kFloat6E2M3, 4), 3u);  // ceil(6*n/8)
  EXPECT_EQ(storage_bytes(DType::kFloat6E3M2, 5), 4u);
  EXPECT_TRUE(is_packed(DType::kInt4));
  EXPECT_FALSE(is_packed(DType::kInt8));
}

TEST(DType, NumpyDescriptors) {
  EXPECT_EQ(dtype_info(DType::kFloat32).numpy_descr, "<f4");
  EXPECT_EQ(dtype_info(DType::kBool).numpy_descr, "|b1");
  EXPECT_EQ(dtype_from_numpy_descr("<f2"), DType::kFloat16);
  EXPECT_EQ(dtype_from_numpy_descr("|i1"), DType::kInt8);
  EXPECT_EQ(dtype_from_numpy_descr("<c16"), DType::kComplex128);
  EXPECT_EQ(dtype_from_numpy_descr("<u8"), DType::kUInt64);
  EXPECT_FALSE(dtype_from_numpy_descr("|O").has_value());
  EXPECT_FALSE(dtype_from_numpy_descr("<V2").has_value());
  EXPECT_TRUE(dtype_info(DType::kBFloat16).numpy_descr.empty());
}

TEST(DType, UnknownValuesAreClearErrors) {
  EXPECT_THROW(dtype_from_onnx(99), InvalidInputError);
  EXPECT_THROW(dtype_from_onnx(0), InvalidInputError);
  try {
    dtype_from_name("float33");
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("float33"), std::string::npos);
  }
}

}  // namespace
}  // namespace parity
