// Failing layerwise tensors that are no divergence (parity/compare/layerwise_review.h): equal
// infinities (NaN errors in Polygraphy's arithmetic) and int64 values clamped to int32 by a backend.
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "parity/compare/layerwise.h"
#include "parity/compare/layerwise_review.h"
#include "test_compare_helpers.h"

namespace parity::compare {
namespace {

using testing::f32;
using testing::ints;
using testing::LogCapture;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

LayerwiseResult two_runs() {
  LayerwiseResult result;
  result.runner0 = "r0";
  result.runner1 = "r1";
  return result;
}

TEST(LayerwiseReview, EqualInfinitiesAloneAreNoDivergence) {
  LayerwiseResult result = two_runs();
  {
    LogCapture comparison_log;  // Polygraphy's comparison lines (with their NaN errors)
    SimpleOutputParams params;
    Tensor mask = f32({0, kNegInf, 0, kNegInf});
    compare_layer(result, 0, 0, "scores", "add_mask", "Add", mask, mask, params);
    compare_layer(result, 1, 0, "y", "softmax", "Softmax", f32({1, 2}), f32({1, 2}), params);
  }
  LogCapture log;
  ASSERT_EQ(result.entries.size(), 2u);
  const LayerwiseEntry& scores = result.entries[0];
  // Polygraphy's verdict stands (inf - inf is NaN, which fails); the summary does not rank it.
  EXPECT_FALSE(scores.comparison.passed);
  EXPECT_TRUE(std::isnan(scores.comparison.simple->max_absdiff));
  ASSERT_TRUE(scores.infinities_equal_errors.has_value());
  EXPECT_EQ(scores.max_abs_error(), 0.0);
  EXPECT_NE(scores.not_a_divergence.find("same infinity"), std::string::npos) << scores.not_a_divergence;
  EXPECT_EQ(result.first_divergence(), nullptr);
  for (const auto* entry : result.worst(10)) EXPECT_NE(entry->tensor, "scores");
  log_layerwise_summary(result);
  const std::string text = log.text();
  EXPECT_NE(text.find("tensor 'scores' produced by node 'add_mask'"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(to_json(result)["not_divergences"][0]["tensor"], "scores");
}

TEST(LayerwiseReview, EqualInfinitiesBesideARealErrorRankByTheFiniteError) {
  LogCapture log;
  LayerwiseResult result = two_runs();
  SimpleOutputParams params;
  compare_layer(result, 0, 0, "scores", "add_mask", "Add", f32({0.5f, kNegInf, 1, kNegInf}),
                f32({0.5f, kNegInf, 1.25f, kNegInf}), params);
  const LayerwiseEntry* first = result.first_divergence();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->tensor, "scores");
  EXPECT_TRUE(first->not_a_divergence.empty());
  EXPECT_DOUBLE_EQ(first->max_abs_error(), 0.25);
  EXPECT_NEAR(first->excess(), 0.2 / 1e-5, 1);  // rel error 0.25/1.25 is the smaller excess
  EXPECT_DOUBLE_EQ(to_json(result)["first_divergence"]["max_absdiff"].get<double>(), 0.25);
}

TEST(LayerwiseReview, InfinitiesCompareEqualNeedsNoReview) {
  LayerwiseResult result = two_runs();
  SimpleOutputParams params;
  params.infinities_compare_equal = true;
  Tensor mask = f32({0, kNegInf});
  compare_layer(result, 0, 0, "scores", "add_mask", "Add", mask, mask, params);
  EXPECT_TRUE(result.entries[0].comparison.passed);
  EXPECT_FALSE(result.entries[0].infinities_equal_errors.has_value());
}

TEST(LayerwiseReview, Int64ClampedToInt32IsNoDivergence) {
  LogCapture log;
  LayerwiseResult result = two_runs();
  SimpleOutputParams params;
  compare_layer(result, 0, 0, "end", "end_mul", "Mul", ints<int64_t>(DType::kInt64, {3, kInt64Max, -kInt64Max - 1}),
                ints<int64_t>(DType::kInt64, {3, kInt32Max, std::numeric_limits<int32_t>::min()}), params);
  ASSERT_FALSE(result.entries[0].comparison.passed);
  EXPECT_NE(result.entries[0].not_a_divergence.find("clamping to int32"), std::string::npos);
  EXPECT_EQ(result.first_divergence(), nullptr);
  EXPECT_TRUE(result.worst(10).empty());
}

TEST(LayerwiseReview, OtherInt64DifferencesAreDivergences) {
  LogCapture log;
  LayerwiseResult result = two_runs();
  SimpleOutputParams params;
  // One clamped value beside a real difference; and a large value not equal to its clamp.
  compare_layer(result, 0, 0, "a", "n_a", "Mul", ints<int64_t>(DType::kInt64, {kInt64Max, 5}),
                ints<int64_t>(DType::kInt64, {kInt32Max, 6}), params);
  compare_layer(result, 1, 0, "b", "n_b", "Mul", ints<int64_t>(DType::kInt64, {kInt64Max}),
                ints<int64_t>(DType::kInt64, {kInt32Max - 1}), params);
  for (const auto& entry : result.entries) {
    EXPECT_FALSE(entry.comparison.passed) << entry.tensor;
    EXPECT_TRUE(entry.not_a_divergence.empty()) << entry.tensor;
  }
  ASSERT_NE(result.first_divergence(), nullptr);
  EXPECT_EQ(result.first_divergence()->tensor, "a");
}

}  // namespace
}  // namespace parity::compare
