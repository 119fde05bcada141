// Statistics of one tensor: every value below is derived by hand from the definitions (population
// variance, numpy's "linear" quantile: virtual index (n-1)q, lerp b - (b-a)(1-t) when t >= 0.5 else
// a + (b-a)t, in the array's own type) or, for large arrays, checked against a full sort.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/python_format.h"
#include "parity/statistics/statistics.h"
#include "parity/core/thread_pool.h"
#include "test_compare_helpers.h"
#include "test_kernel_levels.h"
#include "../../src/statistics/fast/rank_selection_kernels.h"
#include "../../src/statistics/fast/rank_selection.h"
#include "../../src/statistics/streaming_statistics.h"

namespace parity::statistics {
namespace {

using namespace compare::testing;

TEST(CompareStatistics, SmallFloatArrayByHand) {
  // x = [[1, 2, 3], [4, -5, 6]]: sum 11, mean 11/6; sum of squares 91, so
  // sum (x-mean)^2 = 91 - 121/6 = 70.8333 and var = 11.80556, std = 3.43592.
  // Sorted: -5 1 2 3 4 6 -> median (2+3)/2; p90: index 4.5 -> 6 - 2*0.5 = 5; p95: 6 - 2*0.25;
  // p99: 6 - 2*0.05 = 5.9. avg-magnitude 21/6.
  TensorSummary s = summarize(f32({2, 3}, {1, 2, 3, 4, -5, 6}).view());
  EXPECT_NEAR(s.finite.mean, 11.0 / 6.0, 1e-6);
  EXPECT_NEAR(s.finite.variance, 70.833333 / 6.0, 1e-5);
  EXPECT_NEAR(s.finite.std_dev, std::sqrt(70.833333 / 6.0), 1e-5);
  EXPECT_EQ(s.finite.median, 2.5);
  EXPECT_EQ(s.finite.min, -5);
  EXPECT_EQ(s.finite.argmin, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.finite.max, 6);
  EXPECT_EQ(s.finite.argmax, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.finite.avg_magnitude, 3.5);
  EXPECT_EQ(s.finite.quantile(0.9), 5.0);
  EXPECT_EQ(s.finite.quantile(0.95), 5.5);
  EXPECT_EQ(s.finite.quantile(0.99), static_cast<double>(6.0f - 2.0f * 0.05f));
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "r"),
            "r | Stats: mean=1.8333, std-dev=3.4359, var=11.806, median=2.5, min=-5 at (1, 1), max=6 at (1, 2), "
            "avg-magnitude=3.5, p90=5, p95=5.5, p99=5.9");
  // No NaN/Inf: Parity's line is Polygraphy's.
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kParity, "r"),
            format_stats_line(s, StatisticsStyle::kPolygraphy, "r"));
  // Validate prints the numbers without a label.
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "").rfind("mean=1.8333, ", 0), 0u);
}

TEST(CompareStatistics, NanPoisonsPolygraphyButNotParity) {
  TensorSummary s = summarize(f32({1.0f, NAN, INFINITY}).view());
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.posinf_count, 1);
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "x"),
            "x | Stats: mean=nan, std-dev=nan, var=nan, median=nan, min=nan at (1,), max=nan at (1,), "
            "avg-magnitude=nan, p90=nan, p95=nan, p99=nan");
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kParity, "x"),
            "x | Stats: mean=1, std-dev=0, var=0, median=1, min=1 at (0,), max=1 at (0,), avg-magnitude=1, "
            "p90=1, p95=1, p99=1 | NaN: 1, Inf: 1");
}

TEST(CompareStatistics, InfinitiesFollowNumpy) {
  // [1, inf, -inf, 2]: inf + -inf -> mean NaN; std NaN; sorted -inf 1 2 inf -> median 1.5;
  // p90: index 2.7 between 2 and inf, t >= 0.5 -> inf - (inf-2)*0.3 = inf - inf = NaN.
  TensorSummary s = summarize(f32({1.0f, INFINITY, -INFINITY, 2.0f}).view());
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "x"),
            "x | Stats: mean=nan, std-dev=nan, var=nan, median=1.5, min=-inf at (2,), max=inf at (1,), "
            "avg-magnitude=inf, p90=nan, p95=nan, p99=nan");
  // Only +inf: the mean is inf; median of 1 2 3 inf is 2.5.
  TensorSummary t = summarize(f32({1.0f, INFINITY, 2.0f, 3.0f}).view());
  EXPECT_TRUE(std::isinf(t.polygraphy.mean));
  EXPECT_EQ(t.polygraphy.median, 2.5);
  EXPECT_EQ(t.polygraphy.min, 1);
  EXPECT_EQ(t.finite.max, 3);
  EXPECT_EQ(t.finite.median, 2);
}

TEST(CompareStatistics, OnlyNonFiniteValues) {
  TensorSummary s = summarize(f32({NAN, NAN}).view());
  EXPECT_EQ(s.finite.state, Statistics::State::kNoFiniteValues);
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kParity, "x"), "x | Stats: no finite values | NaN: 2, Inf: 0");
}

TEST(CompareStatistics, Int8AbsWrapsAndQuantileDifferenceWraps) {
  // mean (-128+5+3)/3 = -40; numpy's abs(int8(-128)) is -128, so avg-magnitude is also -40.
  // Cast up to int32 for var: deviations -88, 45, 43 -> 11618/3 = 3872.67.
  // p90: sorted -128 3 5, index 1.8 -> 5 - 2*0.2 = 4.6.
  TensorSummary s = summarize(ints<int8_t>(DType::kInt8, {-128, 5, 3}).view());
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "i8"),
            "i8 | Stats: mean=-40, std-dev=62.231, var=3872.7, median=3, min=-128 at (0,), max=5 at (1,), "
            "avg-magnitude=-40, p90=4.6, p95=4.8, p99=4.96");
  // int8 [-128, 127]: numpy computes b - a in int8: 255 wraps to -1, so p90 = 127 - (-1)*0.1.
  TensorSummary w = summarize(ints<int8_t>(DType::kInt8, {-128, 127}).view());
  EXPECT_NEAR(w.polygraphy.quantile(0.9), 127.1, 1e-12);
}

TEST(CompareStatistics, Float16QuantilesInterpolateInHalfPrecision) {
  // [1,2,3,4] float16, p90: index 2.7; 1 - 0.7 -> half 0.2998046875; 4 - 0.2998 = 3.7001953125
  // is halfway between halves 3.69921875 and 3.701171875 -> ties to even -> 3.69921875.
  TensorSummary s = summarize(f16({1, 2, 3, 4}).view());
  EXPECT_EQ(s.polygraphy.quantile(0.9), 3.69921875);
  EXPECT_EQ(format_g(s.polygraphy.quantile(0.9), 5), "3.6992");
  EXPECT_EQ(s.polygraphy.median, 2.5);
}

TEST(CompareStatistics, EmptyAndScalar) {
  TensorSummary e = summarize(f32(Shape{0, 3}, {}).view());
  EXPECT_EQ(format_stats_line(e, StatisticsStyle::kPolygraphy, "e"),
            "e | Stats: mean=nan, std-dev=0, var=0, median=0, min=0 at 0, max=0 at 0, avg-magnitude=nan, "
            "p90=inf, p95=inf, p99=inf");
  EXPECT_EQ(format_stats_line(e, StatisticsStyle::kParity, "e"), "e | Stats: empty tensor");
  TensorSummary s = summarize(f32(Shape{}, {3.5f}).view());
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "s"),
            "s | Stats: mean=3.5, std-dev=0, var=0, median=3.5, min=3.5 at (), max=3.5 at (), avg-magnitude=3.5, "
            "p90=3.5, p95=3.5, p99=3.5");
}

TEST(CompareStatistics, BoolHasNoPercentiles) {
  // [T, F, T]: mean 2/3, var p(1-p) = 2/9, median of F T T is T.
  TensorSummary s = summarize(boolean({true, false, true}).view());
  EXPECT_EQ(format_stats_line(s, StatisticsStyle::kPolygraphy, "b"),
            "b | Stats: mean=0.66667, std-dev=0.4714, var=0.22222, median=1, min=0 at (1,), max=1 at (0,), "
            "avg-magnitude=0.66667");
}

TEST(CompareStatistics, Float32SquaresOverflowLikeNumpyButNotInParity) {
  // [1e20, 0] in float32: deviations +-5e19, squares 2.5e39 > FLT_MAX -> numpy's var is inf.
  TensorSummary s = summarize(f32({1e20f, 0.0f}).view());
  EXPECT_TRUE(std::isinf(s.polygraphy.variance));
  EXPECT_TRUE(std::isinf(s.polygraphy.std_dev));
  EXPECT_NEAR(s.finite.variance / 2.5e39, 1.0, 1e-6);
  EXPECT_NEAR(s.finite.std_dev / 5e19, 1.0, 1e-6);
}

TEST(CompareStatistics, FirstOccurrenceIndices) {
  TensorSummary s = summarize(f32({2, 0, 5, 0, 5}).view());
  EXPECT_EQ(s.finite.argmin, (std::vector<int64_t>{1}));
  EXPECT_EQ(s.finite.argmax, (std::vector<int64_t>{2}));
}

// ---- Large arrays: exact order statistics against a full sort ----
template <typename T>
void check_order_statistics(std::vector<T> values) {
  const std::size_t n = values.size();
  ASSERT_EQ(n % 2, 1u);
  ASSERT_EQ((n - 1) % 100, 0u);  // (n-1)*q is an integer for q = 0.9, 0.95, 0.99: no interpolation
  DType dtype = std::is_same_v<T, float>     ? DType::kFloat32
                : std::is_same_v<T, double>  ? DType::kFloat64
                : std::is_same_v<T, int32_t> ? DType::kInt32
                                             : DType::kInt64;
  Tensor t = Tensor::from_bytes(dtype, Shape{static_cast<int64_t>(n)}, values.data(), n * sizeof(T));
  TensorSummary s = summarize(t.view());
  std::vector<T> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(s.finite.min, static_cast<double>(sorted.front()));
  EXPECT_EQ(s.finite.max, static_cast<double>(sorted.back()));
  EXPECT_EQ(s.finite.median, static_cast<double>(sorted[n / 2]));
  EXPECT_EQ(s.polygraphy.median, static_cast<double>(sorted[n / 2]));
  for (double q : {0.9, 0.95, 0.99}) {
    std::size_t k = static_cast<std::size_t>(static_cast<double>(n - 1) * q);
    EXPECT_EQ(s.finite.quantile(q), static_cast<double>(sorted[k])) << "q=" << q;
  }
  long double sum = 0;
  for (T v : values) sum += static_cast<long double>(v);
  double mean = static_cast<double>(sum / static_cast<long double>(n));
  EXPECT_NEAR(s.finite.mean, mean, std::fabs(mean) * 1e-6 + 1e-12);
}

TEST(CompareStatistics, OrderStatisticsFloat32MultiThreaded) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> v(4'000'001);
  for (auto& x : v) x = normal(rng);
  for (std::size_t i = 0; i < v.size(); i += 3) v[i] = 0.25f;  // heavy ties
  check_order_statistics(v);
}

TEST(CompareStatistics, OrderStatisticsFloat64ClusteredNeedsDeepRefinement) {
  // All values share their top 32 key bits: the selection must refine to bits 33-64.
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> offset(0, 1'000'000);
  std::vector<double> v(200'001);
  for (auto& x : v) x = 1.0 + offset(rng) * 1e-15;
  check_order_statistics(v);
}

TEST(CompareStatistics, OrderStatisticsInt64AndInt32) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> wide(-(int64_t{1} << 60), int64_t{1} << 60);
  std::vector<int64_t> a(300'001);
  for (auto& x : a) x = (rng() % 4 == 0) ? 7 : wide(rng);
  check_order_statistics(a);
  std::uniform_int_distribution<int32_t> small(-5, 5);
  std::vector<int32_t> b(2'500'001);
  for (auto& x : b) x = small(rng);
  check_order_statistics(b);
}

TEST(CompareStatistics, PolygraphyMedianWithInfinitiesCountsThemAtTheEnds) {
  // Sorted: -inf -inf 1 2 3 +inf -> numpy's median is (1 + 2) / 2; Parity's over the finite
  // values 1 2 3 is 2.
  TensorSummary s = summarize(f32({INFINITY, 1, -INFINITY, 2, -INFINITY, 3}).view());
  EXPECT_EQ(s.polygraphy.median, 1.5);
  EXPECT_EQ(s.finite.median, 2);
}

// ---- numpy's float32 summation order ----
TEST(CompareNumpySum, ShortSequencesAddInOrder) {
  // n < 8: ((0 + 1e8) + 1) + -1e8 + 1 in float32: 1e8 + 1 rounds back to 1e8, so the sum is 1.
  std::vector<float> v = {1e8f, 1.0f, -1e8f, 1.0f};
  EXPECT_EQ(detail::pairwise_sum32(v.data(), 4), 1.0f);
}

TEST(CompareNumpySum, BlocksUseEightAccumulators) {
  // n = 16: accumulator j adds v[j] and v[j+8]; with v[0] = 1e8, v[8] = -1e8 and ones elsewhere,
  // r0 = 0 and r1..r7 = 2, so the sum is 14 (in order it would be 7: each +1 is lost next to 1e8).
  std::vector<float> v(16, 1.0f);
  v[0] = 1e8f;
  v[8] = -1e8f;
  EXPECT_EQ(detail::pairwise_sum32(v.data(), 16), 14.0f);
}

TEST(CompareNumpySum, SplitsAndChunksMergeExactly) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1000.0f);
  const int64_t n = 3'000'037;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = normal(rng);
  const float whole = detail::pairwise_sum32(v.data(), n);
  int depth = 0;
  auto ranges = detail::tree_ranges(n, 4, &depth);
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(depth, 2);
  auto sum_parts = [&](bool buffered) {
    std::vector<detail::SumPart32> parts;
    for (auto [begin, end] : ranges) {
      parts.emplace_back(buffered, begin, end);
      for (int64_t i = begin; i < end; ++i) parts.back().add(v[static_cast<std::size_t>(i)]);
    }
    return detail::SumPart32::combine(parts, n, depth);
  };
  EXPECT_EQ(sum_parts(false), whole);  // the tree's nodes added in tree order
  // Buffered (numpy's casting reduce): 8192-value chunks, each pairwise, added in order.
  float chunked = 0.0f;
  for (int64_t c = 0; c < n; c += 8192) chunked += detail::pairwise_sum32(v.data() + c, std::min<int64_t>(8192, n - c));
  EXPECT_EQ(sum_parts(true), chunked);
}

TEST(CompareNumpySum, SeveralStreamsAtOnceEqualEachAlone) {
  // pairwise_sums32 walks the tree once for up to six streams: each sum is the stream's own, at
  // lengths around the leaf (8, 128) and split boundaries.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1000.0f);
  for (int64_t n : {1, 7, 8, 9, 127, 128, 129, 136, 1000, 2048, 4099, 100'003}) {
    std::vector<std::vector<float>> streams(detail::kMaxPairwiseStreams,
                                            std::vector<float>(static_cast<std::size_t>(n)));
    for (auto& stream : streams)
      for (auto& x : stream) x = normal(rng);
    for (int count = 1; count <= detail::kMaxPairwiseStreams; ++count) {
      std::vector<const float*> pointers;
      for (int k = 0; k < count; ++k) pointers.push_back(streams[static_cast<std::size_t>(k)].data());
      std::vector<float> sums(static_cast<std::size_t>(count));
      detail::pairwise_sums32(pointers.data(), count, n, sums.data());
      for (int k = 0; k < count; ++k) {
        detail::PairwiseSum32 streamed(n);  // fed in uneven pieces, as the general kernel does
        const float* v = streams[static_cast<std::size_t>(k)].data();
        for (int64_t at = 0, piece = 1; at < n; at += piece, piece = piece * 3 % 1000 + 1)
          streamed.add(v + at, std::min(piece, n - at));
        EXPECT_EQ(sums[static_cast<std::size_t>(k)], streamed.result()) << "n=" << n << " stream " << k;
      }
    }
  }
}

// Selection runs on the AVX-512 kernels where the CPU has them and on the portable ones: both are
// checked against a full sort.
class CompareRankSelection : public detail::kernels::KernelLevelTest {};

TEST_P(CompareRankSelection, MatchesNthElementOnTiesZerosAndSpreads) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-3, 3);
  auto check = [](std::vector<float> values, const std::string& what) {
    const int64_t n = static_cast<int64_t>(values.size());
    // Single ranks, neighbours (a window's ends) and ranks spread over the whole range.
    std::vector<int64_t> ranks = {0, n / 7, n / 2 - 1, n / 2, n / 2 + 1, n * 9 / 10, n * 99 / 100, n - 2, n - 1};
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    ranks.erase(std::remove_if(ranks.begin(), ranks.end(), [n](int64_t r) { return r < 0 || r >= n; }), ranks.end());
    std::vector<float> got = detail::select_float_ranks(values.data(), n, ranks);
    std::vector<float> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < ranks.size(); ++i)
      EXPECT_EQ(got[i], sorted[static_cast<std::size_t>(ranks[i])] + 0.0f) << what << " rank " << ranks[i];
    for (float v : got) EXPECT_FALSE(std::signbit(v) && v == 0.0f) << what << ": -0 reads as +0";
    if (n == 0) return;
    // Within known bounds (a window's), one rank at a time as the windows ask.
    for (int64_t rank : ranks) {
      std::vector<float> one =
          detail::select_float_ranks_within(values.data(), n, {rank}, sorted.front(), sorted.back());
      EXPECT_EQ(one[0], sorted[static_cast<std::size_t>(rank)] + 0.0f) << what << " within, rank " << rank;
    }
  };
  for (int64_t n : {1, 2, 17, 100, 2048, 2049, 4097, 50'000, 300'000}) {
    std::vector<float> spread(static_cast<std::size_t>(n)), ties(spread.size()), narrow(spread.size()),
        positive(spread.size());
    for (auto& v : spread) v = normal(rng) * 1e3f;
    for (auto& v : ties) v = static_cast<float>(small(rng)) * (small(rng) > 0 ? -0.0f : 1.0f);  // -0 and +0 too
    for (auto& v : narrow) v = 1.0f + std::fabs(normal(rng)) * 1e-6f;  // one exponent, few mantissa bits
    for (auto& v : positive) v = std::fabs(normal(rng)) * 1e-6f;       // errors: many exponents, one sign
    check(spread, "spread n=" + std::to_string(n));
    check(ties, "ties n=" + std::to_string(n));
    check(narrow, "narrow n=" + std::to_string(n));
    check(positive, "positive n=" + std::to_string(n));
  }
}

// The kernels themselves, against the scalar definitions: the key order, each key's digit, and
// the keys of marked buckets, kept in order (tails of every length).
TEST_P(CompareRankSelection, KeyKernelsMatchTheirDefinitions) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (int64_t n : {1, 15, 16, 17, 33, 1000}) {
    std::vector<float> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = normal(rng);
    values[0] = -0.0f;
    if (n > 1) values[1] = 0.0f;
    std::vector<uint32_t> keys(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) keys[i] = detail::kernels::key_of(values[i]);
    for (std::size_t i = 1; i < values.size(); ++i) {  // -0 and +0 (the first two) compare equal as floats
      if (values[i - 1] < values[i]) {
        EXPECT_LT(keys[i - 1], keys[i]) << "key order at " << i;
      } else if (values[i - 1] > values[i]) {
        EXPECT_GT(keys[i - 1], keys[i]) << "key order at " << i;
      }
    }
    if (n > 1) {
      EXPECT_LT(keys[0], keys[1]) << "-0 sorts just below +0";
    }
    uint32_t low = 0, high = 0, key_low = 0, key_high = 0;
    detail::kernels::key_range(values.data(), n, low, high);
    detail::kernels::key_range(keys.data(), n, key_low, key_high);
    EXPECT_EQ(low, *std::min_element(keys.begin(), keys.end())) << "n=" << n;
    EXPECT_EQ(high, *std::max_element(keys.begin(), keys.end())) << "n=" << n;
    EXPECT_EQ(key_low, low);
    EXPECT_EQ(key_high, high);
    for (int shift : {0, 5, 21}) {
      std::vector<uint16_t> digits(values.size()), key_digits(values.size());
      detail::kernels::key_digits(values.data(), n, shift, digits.data());
      detail::kernels::key_digits(keys.data(), n, shift, key_digits.data());
      std::array<uint32_t, detail::kernels::kDigitBuckets / 32> marked{};
      for (std::size_t i = 0; i < keys.size(); ++i) {
        const uint32_t digit = (keys[i] >> shift) & (detail::kernels::kDigitBuckets - 1);
        ASSERT_EQ(digits[i], digit) << "n=" << n << " shift " << shift << " at " << i;
        ASSERT_EQ(key_digits[i], digit) << "n=" << n << " shift " << shift << " at " << i;
        if (i % 3 == 0) marked[digit >> 5] |= 1u << (digit & 31);  // digits of both register halves
      }
      std::vector<uint32_t> expected;
      for (uint32_t key : keys) {
        const uint32_t digit = (key >> shift) & (detail::kernels::kDigitBuckets - 1);
        if ((marked[digit >> 5] >> (digit & 31)) & 1u) expected.push_back(key);
      }
      std::vector<uint32_t> from_values(values.size() + 16), from_keys(values.size() + 16);
      from_values.resize(static_cast<std::size_t>(
          detail::kernels::keys_in_buckets(values.data(), n, shift, marked.data(), from_values.data())));
      from_keys.resize(static_cast<std::size_t>(
          detail::kernels::keys_in_buckets(keys.data(), n, shift, marked.data(), from_keys.data())));
      EXPECT_EQ(from_values, expected) << "n=" << n << " shift " << shift;
      EXPECT_EQ(from_keys, expected) << "n=" << n << " shift " << shift;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CompareRankSelection, detail::kernels::both_levels(), detail::kernels::level_name);

// ---- Histograms ----
TEST(CompareHistogram, EqualValuesWidenTheRangeByHalf) {
  // [1, 1]: numpy uses (0.5, 1.5); 1.0 falls in bin 5: ((1 - 0.5) / 1) * 10 = 5.
  Histogram h = histogram(f32({1, 1}).view(), std::nullopt, StatisticsStyle::kPolygraphy);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.edges[0], 0.5);
  EXPECT_EQ(h.edges[10], 1.5);
  EXPECT_EQ(h.counts[5], 2);
  EXPECT_EQ(h.total(), 2);
}

TEST(CompareHistogram, LastBinIsClosedAndOutsideValuesAreDropped) {
  Histogram h = histogram(f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -1}).view(),
                          HistogramRange{0, 10}, StatisticsStyle::kPolygraphy);
  ASSERT_TRUE(h.valid);
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(h.counts[i], 1) << i;
  EXPECT_EQ(h.counts[9], 2);  // 9 and 10
  EXPECT_EQ(h.total(), 11);   // -1 and 11 are outside
  // Edges .3g: widths 2 ("10") for both columns; bars int(40 * n / 2).
  std::string text = format_histogram(h);
  EXPECT_EQ(text.substr(0, text.find('\n', text.find('\n') + 1)),
            "---- Histogram ----\nBin Range|  Num Elems | Visualization");
  EXPECT_NE(text.find("\n(0 , 1 ) |          1 | ####################\n"), std::string::npos);
  EXPECT_NE(text.find("\n(9 , 10) |          2 | ########################################"), std::string::npos);
}

TEST(CompareHistogram, SuppliedRangeBinsInFloat64LikeNumpyWithPythonNumbers) {
  // Polygraphy passes the range as Python floats: the edges are float64 linspace rounded to float32
  // (edge 7 = f32(2.1) = 2.0999999) and the index is float64 ((2.0999999 / 3) * 10 = 6.9999997 -> 6,
  // then x >= edge 7 moves it up): 2.1f lands in bin 7. In float32 arithmetic throughout (numpy's
  // own range) the edge would be 7 * 0.3f = 2.1000001 and 2.1f would stay in bin 6.
  Histogram h = histogram(f32({0.0f, 1.0f, 2.1f, 3.0f}).view(), HistogramRange{0, 3}, StatisticsStyle::kPolygraphy);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.edges[7], static_cast<double>(2.1f));
  EXPECT_EQ(h.counts[0], 1);
  EXPECT_EQ(h.counts[3], 1);
  EXPECT_EQ(h.counts[7], 1);
  EXPECT_EQ(h.counts[9], 1);
  Histogram own = histogram(f32({0.0f, 2.1f, 3.0f}).view(), std::nullopt, StatisticsStyle::kPolygraphy);
  EXPECT_EQ(own.edges[7], static_cast<double>(7 * 0.3f));
  EXPECT_EQ(own.counts[6], 1);
}

TEST(CompareHistogram, NonFiniteRangeAndEmptyData) {
  // Polygraphy: a NaN makes np.histogram refuse (empty text); Parity bins the finite values.
  Histogram p = histogram(f32({1, NAN, 3}).view(), std::nullopt, StatisticsStyle::kPolygraphy);
  EXPECT_FALSE(p.valid);
  EXPECT_EQ(format_histogram(p), "");
  Histogram q = histogram(f32({1, NAN, 3}).view(), std::nullopt, StatisticsStyle::kParity);
  ASSERT_TRUE(q.valid);
  EXPECT_EQ(q.total(), 2);
  // No value inside the range: Polygraphy's str_histogram returns None, logged as "None".
  Histogram none = histogram(f32({5}).view(), HistogramRange{0, 1},
                             StatisticsStyle::kPolygraphy);
  EXPECT_EQ(format_histogram(none), "None");
}

TEST(CompareHistogram, CommonRangeUsesPythonMinMaxWithNan) {
  TensorSummary a = summarize(f32({NAN, 1}).view()), b = summarize(f32({0, 2}).view());
  // min(nan, 0) is nan (first argument kept), min(0, nan) is 0.
  EXPECT_TRUE(std::isnan(common_histogram_range(a, b, StatisticsStyle::kPolygraphy)->first));
  auto r = common_histogram_range(b, a, StatisticsStyle::kPolygraphy);
  EXPECT_EQ(r->first, 0);
  EXPECT_EQ(r->last, 2);
  auto f = common_histogram_range(a, b, StatisticsStyle::kParity);
  EXPECT_EQ(f->first, 0);
  EXPECT_EQ(f->last, 2);
}

TEST(CompareStatistics, NonFiniteCountsAgreeWithSummarize) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-3, 3);
  std::vector<float> big(10000);
  for (auto& v : big) v = value(rng);
  for (std::size_t i = 0; i < big.size(); i += 97) big[i] = nan;  // across chunk boundaries
  for (std::size_t i = 5; i < big.size(); i += 1001) big[i] = (i % 2) ? inf : -inf;
  Tensor large = Tensor::from_bytes(DType::kFloat32, {static_cast<int64_t>(big.size())}, big.data(),
                                    big.size() * sizeof(float));
  for (const Tensor& t : {f32({1, nan, inf, -inf, -inf, 2}), f16({nan, 1, inf}), f64({-INFINITY, 0, NAN}), large,
                          f32({1, 2, 3})}) {
    TensorSummary summary = summarize(t);
    NonFiniteCounts counts = count_nonfinite(t);
    EXPECT_EQ(counts.nan, summary.nan_count);
    EXPECT_EQ(counts.posinf, summary.posinf_count);
    EXPECT_EQ(counts.neginf, summary.neginf_count);
    EXPECT_EQ(counts.any(), summary.nan_count + summary.posinf_count + summary.neginf_count > 0);
  }
  NonFiniteCounts mixed = count_nonfinite(f32({1, nan, inf, -inf, -inf, 2}));
  EXPECT_EQ(mixed.nan, 1);
  EXPECT_EQ(mixed.posinf, 1);
  EXPECT_EQ(mixed.neginf, 2);
  EXPECT_FALSE(count_nonfinite(ints<int32_t>(DType::kInt32, {1, -2, 3})).any());
  EXPECT_FALSE(count_nonfinite(boolean({true, false})).any());
}


// Streams of at most detail::kSelectByCopyLimit elements select their order statistics in a copy,
// larger ones through the radix histograms: both give the same values. The larger tensor holds
// the same finite values plus one NaN, so Parity's finite view describes the same values.
TEST(CompareStatistics, SelectionByCopyAgreesWithRadixHistograms) {
  const int64_t n = detail::kSelectByCopyLimit;
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Tensor small = Tensor::zeros(DType::kFloat32, {n});
  Tensor large = Tensor::zeros(DType::kFloat32, {n + 1});
  for (int64_t i = 0; i < n; ++i) {
    float v = std::round(normal(generator) * 64.0f) / 64.0f;  // ties too
    small.mutable_data<float>()[i] = v;
    large.mutable_data<float>()[i] = v;
  }
  large.mutable_data<float>()[n] = std::numeric_limits<float>::quiet_NaN();
  SummaryOptions options;
  options.extra_quantiles = {0.0, 0.25, 0.5001, 1.0};
  const Statistics by_copy = summarize(small.view(), options).finite;
  const Statistics by_histogram = summarize(large.view(), options).finite;
  EXPECT_EQ(by_copy.median, by_histogram.median);
  EXPECT_EQ(by_copy.min, by_histogram.min);
  EXPECT_EQ(by_copy.max, by_histogram.max);
  ASSERT_EQ(by_copy.quantile_values.size(), by_histogram.quantile_values.size());
  for (std::size_t i = 0; i < by_copy.quantile_values.size(); ++i)
    EXPECT_EQ(by_copy.quantile_values[i], by_histogram.quantile_values[i]) << by_copy.quantile_levels[i];
}

// The compute thread setting changes how a large tensor is split, never its numbers.
TEST(CompareStatistics, NumbersDoNotDependOnTheComputeThreads) {
  const int64_t n = (int64_t{1} << 22) + 12345;
  std::mt19937 generator(11);
  std::normal_distribution<float> normal(1.0f, 2.0f);
  Tensor tensor = Tensor::zeros(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) tensor.mutable_data<float>()[i] = normal(generator);
  set_compute_threads(1);
  const TensorSummary one = summarize(tensor.view());
  set_compute_threads(4);
  const TensorSummary four = summarize(tensor.view());
  set_compute_threads(0);
  EXPECT_EQ(format_stats_line(one, StatisticsStyle::kPolygraphy, "x"),
            format_stats_line(four, StatisticsStyle::kPolygraphy, "x"));
  EXPECT_EQ(one.size, n);
  EXPECT_EQ(one.polygraphy.mean, four.polygraphy.mean);
  EXPECT_EQ(one.polygraphy.variance, four.polygraphy.variance);
  EXPECT_EQ(one.polygraphy.median, four.polygraphy.median);
  EXPECT_EQ(one.polygraphy.quantile_values, four.polygraphy.quantile_values);
  EXPECT_EQ(one.finite.avg_magnitude, four.finite.avg_magnitude);
}

}  // namespace
}  // namespace parity::statistics
