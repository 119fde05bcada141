// runtime::cast_like_numpy / coerce_feed_dtypes: what Polygraphy's DataLoaderCache does with a fed
// buffer of another dtype (warn, then numpy's astype), value by value.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/half.h"
#include "parity/runtime/feed_coercion.h"

namespace parity::runtime {
namespace {

template <typename T>
Tensor tensor_of(DType dtype, const std::vector<T>& values) {
  Tensor tensor = Tensor::zeros(dtype, Shape{static_cast<int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) tensor.mutable_data<T>()[i] = values[i];
  return tensor;
}

template <typename T>
std::vector<T> values_of(const Tensor& tensor) {
  return std::vector<T>(tensor.data<T>(), tensor.data<T>() + tensor.size());  // not {}: vector<bool>'s list
}

TEST(FeedCoercion, Float64ToFloat32RoundsToNearest) {
  bool out_of_range = true;
  Tensor cast = cast_like_numpy(tensor_of<double>(DType::kFloat64, {0.1, -2.5, 1e-50}), DType::kFloat32, &out_of_range);
  EXPECT_EQ(cast.dtype(), DType::kFloat32);
  EXPECT_EQ(values_of<float>(cast), (std::vector<float>{0.1f, -2.5f, 0.0f}));
  EXPECT_FALSE(out_of_range);
}

TEST(FeedCoercion, Float64BeyondFloat32IsFlaggedAndBecomesInfinity) {
  bool out_of_range = false;
  Tensor cast = cast_like_numpy(tensor_of<double>(DType::kFloat64, {1e39, 1.0}), DType::kFloat32, &out_of_range);
  EXPECT_TRUE(std::isinf(cast.data<float>()[0]));
  EXPECT_TRUE(out_of_range);
  // NaN and infinity are no out-of-range values for a float type (numpy's finfo check is false).
  out_of_range = true;
  cast_like_numpy(tensor_of<double>(DType::kFloat64, {std::nan(""), INFINITY}), DType::kFloat32, &out_of_range);
  EXPECT_FALSE(out_of_range);
}

TEST(FeedCoercion, FloatToIntegerTruncatesTowardZero) {
  bool out_of_range = true;
  Tensor cast = cast_like_numpy(tensor_of<float>(DType::kFloat32, {-1.7f, 2.9f, 0.5f}), DType::kInt32, &out_of_range);
  EXPECT_EQ(values_of<int32_t>(cast), (std::vector<int32_t>{-1, 2, 0}));
  EXPECT_FALSE(out_of_range);
  cast_like_numpy(tensor_of<float>(DType::kFloat32, {300.0f}), DType::kInt8, &out_of_range);
  EXPECT_TRUE(out_of_range);
}

TEST(FeedCoercion, IntegersWrapAsNumpyAndAreFlaggedOutsideTheTarget) {
  bool out_of_range = false;
  Tensor cast = cast_like_numpy(tensor_of<int64_t>(DType::kInt64, {-1, 256, 7}), DType::kUInt8, &out_of_range);
  EXPECT_EQ(values_of<uint8_t>(cast), (std::vector<uint8_t>{255, 0, 7}));
  EXPECT_TRUE(out_of_range);
  // int64 values above 2^53 reach uint64 exactly (not through double).
  const int64_t big = (int64_t{1} << 53) + 1;
  cast = cast_like_numpy(tensor_of<int64_t>(DType::kInt64, {big}), DType::kUInt64, &out_of_range);
  EXPECT_EQ(cast.data<uint64_t>()[0], static_cast<uint64_t>(big));
  EXPECT_FALSE(out_of_range);
}

TEST(FeedCoercion, ToBoolIsNotZeroAndToHalfRoundsOnce) {
  Tensor cast = cast_like_numpy(tensor_of<double>(DType::kFloat64, {0.0, -0.0, 3.0, std::nan("")}), DType::kBool);
  EXPECT_EQ(values_of<bool>(cast), (std::vector<bool>{false, false, true, true}));
  cast = cast_like_numpy(tensor_of<double>(DType::kFloat64, {1.0 / 3.0}), DType::kFloat16);
  EXPECT_EQ(cast.data<uint16_t>()[0], double_to_float16_bits(1.0 / 3.0));
}

TEST(FeedCoercion, CoercesOnlyMismatchedCastableInputs) {
  TensorMetadata metadata;
  metadata.add("x", DType::kFloat32, std::vector<Dim>{Dim::fixed(2)});
  metadata.add("ids", DType::kInt64, std::vector<Dim>{Dim::fixed(1)});
  metadata.add("text", DType::kString, std::vector<Dim>{Dim::fixed(1)});
  NamedTensors feed;
  feed.emplace_back("x", tensor_of<double>(DType::kFloat64, {0.25, 4.0}));
  feed.emplace_back("ids", tensor_of<int64_t>(DType::kInt64, {3}));
  feed.emplace_back("text", tensor_of<float>(DType::kFloat32, {1.0f}));
  feed.emplace_back("other", tensor_of<double>(DType::kFloat64, {1.0}));
  coerce_feed_dtypes(metadata, feed);
  EXPECT_EQ(feed[0].second.dtype(), DType::kFloat32);
  EXPECT_EQ(values_of<float>(feed[0].second), (std::vector<float>{0.25f, 4.0f}));
  EXPECT_EQ(feed[1].second.dtype(), DType::kInt64);
  EXPECT_EQ(feed[2].second.dtype(), DType::kFloat32);  // no cast to strings: validate_feed refuses it
  EXPECT_EQ(feed[3].second.dtype(), DType::kFloat64);  // no such input: left for validate_feed
}

}  // namespace
}  // namespace parity::runtime
