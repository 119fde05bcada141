// The int8 calibration pieces that the CLI tests (tests/cli/test_int8_*.py, against numpy) cannot
// reach one by one: the histogram's range doubling over batches, zeros and non-finite values,
// percentile and entropy on hand-made histograms, and the calibration cache's text.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/temporary_folder.h"
#include "parity/quantize/abs_histogram.h"
#include "parity/quantize/calibration_algorithm.h"
#include "parity/quantize/calibration_cache.h"

namespace parity::quantize {
namespace {

TEST(AbsHistogram, BatchesPastTheRangeMergeBinsExactly) {
  // First batch: max 1, so bins of 1/2048. Second: max 3, so the range doubles twice, to 4.
  std::vector<float> first, second;
  for (int i = 0; i < 1000; ++i) first.push_back(std::sin(i * 0.37f));
  first.push_back(-1.0f);
  for (int i = 0; i < 1000; ++i) second.push_back(3.0f * std::cos(i * 0.11f));
  second.push_back(3.0f);
  AbsHistogram histogram;
  histogram.add(first);
  histogram.add(second);
  EXPECT_EQ(histogram.range(), 4.0);
  EXPECT_EQ(histogram.max_abs(), 3.0);
  EXPECT_EQ(histogram.count(), 2002);
  // The same values binned straight into bins of 4/2048.
  std::vector<int64_t> expected(AbsHistogram::kBins, 0);
  for (const auto* batch : {&first, &second})
    for (float v : *batch) ++expected[static_cast<std::size_t>(std::fabs(v) * 512.0)];
  EXPECT_EQ(histogram.bins(), expected);
}

TEST(AbsHistogram, ZerosBeforeTheRangeGoToBinZeroAndNonFiniteValuesAreLeftOut) {
  AbsHistogram histogram;
  histogram.add(std::vector<float>{0.0f, 0.0f, -0.0f});
  EXPECT_TRUE(histogram.bins().empty());
  EXPECT_EQ(histogram.max_abs(), 0.0);
  histogram.add(std::vector<float>{2.0f, std::numeric_limits<float>::quiet_NaN(), -INFINITY, 1.0f});
  EXPECT_EQ(histogram.count(), 5);
  EXPECT_EQ(histogram.non_finite(), 2);
  EXPECT_EQ(histogram.bins()[0], 3);
  EXPECT_EQ(histogram.bins()[1024], 1);
  EXPECT_EQ(histogram.bins()[2047], 1);
}

TEST(AbsHistogram, MaxOnlyKeepsNoBins) {
  AbsHistogram histogram;
  histogram.add_max_only(std::vector<float>{-3.5f, std::numeric_limits<float>::quiet_NaN(), 1.0f, INFINITY});
  histogram.add_max_only(std::vector<float>{2.0f});
  EXPECT_EQ(histogram.max_abs(), 3.5);
  EXPECT_EQ(histogram.count(), 3);
  EXPECT_EQ(histogram.non_finite(), 2);
  EXPECT_TRUE(histogram.bins().empty());
  EXPECT_EQ(amax_from(histogram, {CalibrationAlgo::kMinMax, 99.99}), 3.5);
}

// Long enough for the vectorized lanes and a tail; the largest |x| negative, in the middle of a
// lane block, with NaN and infinities of both signs among the values.
TEST(AbsHistogram, MaxOnlyOverManyValuesSkipsNonFiniteOnes) {
  std::vector<float> values;
  for (int i = 0; i < 1001; ++i) values.push_back(static_cast<float>(i % 2 ? -i : i) * 0.001f);
  values[517] = -7.25f;
  values[3] = std::numeric_limits<float>::quiet_NaN();
  values[40] = INFINITY;
  values[1000] = -INFINITY;
  AbsHistogram histogram;
  histogram.add_max_only(values);
  EXPECT_EQ(histogram.max_abs(), 7.25);
  EXPECT_EQ(histogram.count(), 998);
  EXPECT_EQ(histogram.non_finite(), 3);

  AbsHistogram subnormal;
  subnormal.add_max_only(std::vector<float>(40, -std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(subnormal.max_abs(), static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(subnormal.count(), 40);
}

// The largest finite |x| and the finite count, one value at a time in double: what both kernels must give.
std::pair<double, int64_t> finite_max_abs_reference(std::span<const float> values) {
  double max = 0;
  int64_t finite = 0;
  for (float value : values) {
    if (!std::isfinite(value)) continue;
    ++finite;
    max = std::max(max, std::fabs(static_cast<double>(value)));
  }
  return {max, finite};
}

// Every length from 0 to 200 (each tail of the 64- and 16-value steps) at every start within a vector
// (unaligned loads), over values mixing NaN, infinities, subnormals, signed zeros, and the largest
// |x| placed at random: the portable and the AVX-512 kernel agree with the reference exactly.
TEST(AbsHistogram, FiniteMaxAbsKernelsAgreeWithOneValueAtATime) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  std::uniform_int_distribution<int> kind(0, 19);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            INFINITY, -INFINITY, std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(), 0.0f, -0.0f,
                            std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  std::vector<float> values(256);
  const bool avx512 = detail::finite_max_abs_avx512_available();
  int checked = 0;
  for (std::size_t length = 0; length <= 200; ++length) {
    for (std::size_t start = 0; start < 16; ++start) {
      for (float& value : values) {
        const int k = kind(random);
        value = k < 10 ? specials[k] : uniform(random);
      }
      // Half the cases without a special value: a max that is an ordinary float.
      if ((length + start) % 2 == 0)
        for (float& value : values)
          if (!std::isfinite(value) || std::fabs(value) > 3.0f) value = uniform(random);
      const std::span<const float> span(values.data() + start, length);
      const auto expected = finite_max_abs_reference(span);
      ASSERT_EQ(detail::finite_max_abs_portable(span), expected) << "length " << length << ", start " << start;
      if (avx512) {
        ASSERT_EQ(detail::finite_max_abs_avx512(span), expected) << "length " << length << ", start " << start;
      }
      ASSERT_EQ(finite_max_abs(span), expected);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 201 * 16);
  if (!avx512) GTEST_SKIP() << "this CPU has no AVX-512F: only the portable kernel was checked";
}

TEST(CalibrationAlgorithm, PercentileTakesTheTopEdgeOfTheBinReachingIt) {
  AbsHistogram histogram;
  std::vector<float> values;
  for (int i = 1; i <= 2048; ++i) values.push_back(static_cast<float>(i));  // one value a bin
  histogram.add(values);
  // Bins of width 1 over [0, 2048): 50% of the values is the 1024th, 1024, in bin [1024, 1025).
  EXPECT_DOUBLE_EQ(amax_percentile(histogram, 50.0), 1025.0);
  EXPECT_DOUBLE_EQ(amax_percentile(histogram, 100.0), 2048.0);
}

TEST(CalibrationAlgorithm, EntropyOfAUniformHistogramKeepsTheWholeRange) {
  // Evenly spread values: clipping anything only adds divergence, so the whole range is kept.
  std::vector<int64_t> bins(2048, 10);
  EXPECT_DOUBLE_EQ(amax_entropy(bins, 2048.0), 2048.0);
}

TEST(CalibrationAlgorithm, EntropyClipsASparseTail) {
  // A decaying mass over the first 300 bins (merged into 16-bin levels its shape is lost), one
  // count at the far end: the amax stays near the mass, far below the outlier.
  std::vector<int64_t> bins(2048, 0);
  for (int i = 0; i < 300; ++i) bins[i] = std::llround(100000 * std::exp(-i / 30.0));
  bins[2047] = 1;
  const double amax = amax_entropy(bins, 2048.0);
  EXPECT_GE(amax, 128.0);
  EXPECT_LT(amax, 512.0);
}

TEST(CalibrationAlgorithm, AllZeroTensorHasAmaxZero) {
  AbsHistogram histogram;
  histogram.add(std::vector<float>(16, 0.0f));
  for (auto algo : {CalibrationAlgo::kEntropy, CalibrationAlgo::kMinMax, CalibrationAlgo::kPercentile})
    EXPECT_EQ(amax_from(histogram, {algo, 99.99}), 0.0);
}

TEST(CalibrationCache, ScalesAsHexOfTheirFloat32Bits) {
  EXPECT_EQ(scale_to_hex(0.0078125f), "3c000000");  // 2^-7
  EXPECT_EQ(scale_to_hex(1.0f), "3f800000");
}

TEST(CalibrationCache, WrittenThenReadGivesTheSameScales) {
  TemporaryFolder folder("parity-test", "the calibration cache test");
  const auto path = folder.path() / "c.cache";
  CalibrationCache cache{CalibrationAlgo::kPercentile, {{"a:b", 0.1f}, {"x", 3.5e-3f}}};
  write_calibration_cache(path, cache);
  EXPECT_EQ(read_file(path), "TRT-8601-PercentileCalibration\na:b: 3dcccccd\nx: 3b656042\n");
  const auto read = read_calibration_cache(path, CalibrationAlgo::kPercentile);
  EXPECT_EQ(read.scales, cache.scales);
}

TEST(CalibrationCache, NonPositiveScaleNamesTheLine) {
  TemporaryFolder folder("parity-test", "the calibration cache test");
  const auto path = folder.path() / "c.cache";
  write_file_atomic(path, "TRT-8601-MinMaxCalibration\nx: 00000000\n");
  try {
    read_calibration_cache(path, CalibrationAlgo::kMinMax);
    FAIL();
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what()).find("c.cache:2"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace parity::quantize
