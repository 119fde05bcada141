// CompareFunc.simple: Polygraphy's pass/fail rules, derived by hand from its definition:
//   absdiff = |cast_up(out0) - cast_up(out1)|, reldiff = absdiff / |out1 (zeros -> 2.22e-16)|,
//   an element mismatches when (absdiff > atol or NaN) AND (reldiff > rtol or NaN);
//   for max/mean/median/quantile the same OR rule on that statistic.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "parity/compare/comparator.h"
#include "parity/compare/compare_func.h"
#include "test_compare_helpers.h"

namespace parity::compare {
namespace {

using namespace testing;
using namespace statistics;

OutputComparison run(const Tensor& a, const Tensor& b, SimpleOutputParams params = {}) {
  return compare_simple_output("r0", "y", a.view(), "r1", "y", b.view(), params);
}

SimpleOutputParams with(double atol, double rtol, ErrorStat stat = ErrorStat::kElemwise) {
  SimpleOutputParams p;
  p.atol = atol;
  p.rtol = rtol;
  p.check_error_stat = stat;
  return p;
}

TEST(CompareSimple, TolerancesAreCombinedWithOr) {
  LogCapture log;
  // |1 - 1.1| = 0.1 (float32), relative 0.1/1.1 = 0.0909.
  EXPECT_TRUE(run(f32({1.0f}), f32({1.1f}), with(0.2, 1e-5)).passed);   // abs suffices
  EXPECT_TRUE(run(f32({1.0f}), f32({1.1f}), with(1e-5, 0.1)).passed);   // rel suffices
  EXPECT_FALSE(run(f32({1.0f}), f32({1.1f}), with(1e-5, 0.05)).passed); // neither
}

TEST(CompareSimple, ElemwiseVersusMaxMeanMedianQuantile) {
  LogCapture log;
  // out0 = [0, 100], out1 = [0.5, 101]: absdiff [0.5, 1], reldiff [1, 1/101 = 0.0099].
  Tensor a = f32({0.0f, 100.0f}), b = f32({0.5f, 101.0f});
  // elemwise, atol 0.6 / rtol 0.02: element 0 passes on abs, element 1 on rel.
  auto e = run(a, b, with(0.6, 0.02));
  EXPECT_TRUE(e.passed);
  EXPECT_EQ(e.simple->mismatch_count, 0);
  // max: max abs 1 > 0.6 and max rel 1 > 0.02.
  EXPECT_FALSE(run(a, b, with(0.6, 0.02, ErrorStat::kMax)).passed);
  // mean: abs 0.75, rel (1 + 0.0099)/2 = 0.50495.
  auto mean = run(a, b, with(0.8, 0.0, ErrorStat::kMean));
  EXPECT_TRUE(mean.passed);
  EXPECT_NEAR(mean.simple->mean_absdiff, 0.75, 1e-7);
  EXPECT_NEAR(mean.simple->mean_reldiff, (1.0 + 1.0 / 101.0) / 2.0, 1e-7);
  EXPECT_FALSE(run(a, b, with(0.7, 0.5, ErrorStat::kMean)).passed);
  // median of two values is their mean.
  auto median = run(a, b, with(0.7, 0.5, ErrorStat::kMedian));
  EXPECT_FALSE(median.passed);
  EXPECT_NEAR(median.simple->median_absdiff, 0.75, 1e-7);
  // quantile 0.99: index 0.99 between 0.5 and 1 -> 1 - 0.5 * 0.01 = 0.995.
  SimpleOutputParams q = with(0.996, 0.0, ErrorStat::kQuantile);
  q.error_quantile = 0.99;
  auto quantile = run(a, b, q);
  EXPECT_TRUE(quantile.passed);
  ASSERT_TRUE(quantile.simple->quantile_absdiff.has_value());
  EXPECT_NEAR(*quantile.simple->quantile_absdiff, 0.995, 1e-6);
  EXPECT_EQ(quantile.simple->required_atol, *quantile.simple->quantile_absdiff);
}

TEST(CompareSimple, NanAlwaysMismatches) {
  LogCapture log;
  auto r = run(f32({NAN, 1.0f}), f32({1.0f, 1.0f}), with(1e9, 1e9));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.simple->mismatch_count, 1);
  EXPECT_EQ(r.simple->nonfinite_error_count, 1);
  EXPECT_TRUE(std::isnan(r.simple->max_absdiff));  // Polygraphy's number
  EXPECT_EQ(r.simple->required_atol_finite, 0);    // Parity's: the finite errors
  EXPECT_FALSE(run(f32({NAN}), f32({1.0f}), with(1e9, 1e9, ErrorStat::kMax)).passed);
  EXPECT_FALSE(run(f32({NAN, 1, 1}), f32({1, 1, 1}), with(1e9, 1e9, ErrorStat::kMedian)).passed);
}

TEST(CompareSimple, InfinitiesCompareEqualOnlyWhenAsked) {
  LogCapture log;
  // inf - inf = NaN -> mismatch by default.
  EXPECT_FALSE(run(f32({INFINITY}), f32({INFINITY})).passed);
  SimpleOutputParams p;
  p.infinities_compare_equal = true;
  EXPECT_TRUE(run(f32({INFINITY, -INFINITY}), f32({INFINITY, -INFINITY}), p).passed);
  EXPECT_FALSE(run(f32({INFINITY}), f32({-INFINITY}), p).passed);  // |inf - -inf| = inf
}

TEST(CompareSimple, ZeroReferenceGetsEpsilonButParityCountsIt) {
  LogCapture log;
  // 1e-6 vs 0: abs 1e-6 <= 1e-5 passes even though rel = 1e-6 / 2^-52 = 4.5e9.
  auto r = run(f32({1e-6f}), f32({0.0f}));
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.simple->zero_reference_count, 1);
  EXPECT_EQ(r.simple->max_reldiff, static_cast<double>(1e-6f) * 4503599627370496.0);  // exact: * 2^52
  EXPECT_TRUE(std::isnan(r.simple->required_rtol_nonzero_reference));  // no non-zero reference left
  EXPECT_NE(log.text().find("Some values are 0. Will add a small epsilon quantity"), std::string::npos);
  EXPECT_FALSE(run(f32({1e-6f}), f32({0.0f}), with(1e-7, 1e-5)).passed);
  // Parity's relative stats leave the zero reference out and say so.
  auto m = run(f32({1.0f, 2.0f}), f32({0.0f, 1.0f}), with(10, 10));
  EXPECT_EQ(m.simple->summaries->reldiff.excluded_count, 1);
  EXPECT_EQ(m.simple->summaries->reldiff.finite.max, 1.0);
  EXPECT_EQ(format_stats_line(m.simple->summaries->reldiff, StatisticsStyle::kParity, "Relative Difference"),
            "Relative Difference | Stats: mean=1, std-dev=0, var=0, median=1, min=1 at (1,), max=1 at (1,), "
            "avg-magnitude=1, p90=1, p95=1, p99=1 | 1 element(s) with zero reference (excluded)");
}

TEST(CompareSimple, IntegerReferenceZeroDividesWithoutEpsilon) {
  LogCapture log;
  // int32 1 vs 0: rel = 1/0 = inf -> fails unless abs passes.
  auto r = run(ints<int32_t>(DType::kInt32, {1}), ints<int32_t>(DType::kInt32, {0}));
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(std::isinf(r.simple->max_reldiff));
  EXPECT_TRUE(run(ints<int32_t>(DType::kInt32, {1}), ints<int32_t>(DType::kInt32, {0}), with(2, 0)).passed);
  // 0 vs 0: abs 0 passes; rel is 0/0 = NaN but the OR rule only needs abs.
  EXPECT_TRUE(run(ints<int32_t>(DType::kInt32, {0}), ints<int32_t>(DType::kInt32, {0})).passed);
  EXPECT_EQ(log.text().find("Some values are 0"), std::string::npos);  // only said for float references
}

TEST(CompareSimple, Float32ToleranceIsRoundedToFloat32) {
  LogCapture log;
  // |0 - 0.1f| = 0.1f = 0.10000000149; numpy compares it with atol=0.1 in float32 (0.1f): not
  // greater -> passes (a float64 comparison would fail it).
  EXPECT_TRUE(run(f32({0.0f}), f32({0.1f}), with(0.1, 0.0)).passed);
  EXPECT_TRUE(run(f32({0.0f}), f32({0.1f}), with(0.1, 0.0, ErrorStat::kMax)).passed);
  // With float64 outputs the same numbers compare in float64: 0.1f > 0.1 -> fails.
  EXPECT_FALSE(run(f64({0.0}), f64({static_cast<double>(0.1f)}), with(0.1, 0.0)).passed);
}

TEST(CompareSimple, DtypesAreCastUpAndPromoted) {
  LogCapture log;
  // float16(0.1) = 0.0999755859375 vs float32 0.1f: 2.44e-5 apart, rel 2.44e-4.
  EXPECT_FALSE(run(f16({0.1f}), f32({0.1f})).passed);
  EXPECT_TRUE(run(f16({0.1f}), f32({0.1f}), with(1e-4, 0)).passed);
  // uint8 is cast up to int32 first: |0 - 255| = 255, not a wrapped 1.
  auto u8 = run(ints<uint8_t>(DType::kUInt8, {0}), ints<uint8_t>(DType::kUInt8, {255}), with(254, 0));
  EXPECT_FALSE(u8.passed);
  EXPECT_EQ(u8.simple->max_absdiff, 255);
  // uint64 is not: 0 - 1 wraps to 2^64 - 1 in numpy.
  auto u64 = run(ints<uint64_t>(DType::kUInt64, {0}), ints<uint64_t>(DType::kUInt64, {1}), with(10, 10));
  EXPECT_FALSE(u64.passed);
  EXPECT_EQ(u64.simple->max_absdiff, 18446744073709551615.0);
  // int32 with float32 promotes to float64.
  EXPECT_TRUE(run(ints<int32_t>(DType::kInt32, {3}), f32({3.0f})).passed);
}

TEST(CompareSimple, BoolOutputsUseXor) {
  LogCapture log;
  // [T, F] vs [T, T]: xor [0, 1]; element 1: abs 1 > atol, rel 1/|True| = 1 > rtol.
  EXPECT_FALSE(run(boolean({true, false}), boolean({true, true})).passed);
  // rel = 1 is not > rtol = 1, so the OR rule passes it.
  EXPECT_TRUE(run(boolean({true, false}), boolean({true, true}), with(1e-5, 1.0)).passed);
}

TEST(CompareSimple, ShapeMismatchFailsUnlessShapeCheckIsOff) {
  LogCapture log;
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {1, 4, 2, 5, 3, 6});  // a transposed
  auto strict = run(a, b);
  EXPECT_FALSE(strict.passed);
  EXPECT_FALSE(strict.compared);
  std::string text = log.text();
  EXPECT_NE(text.find("FAILED | Output: `y` | Will not compare outputs of different shapes.\n"
                      "    Note: Output shapes are (2, 3) and (3, 2)."),
            std::string::npos);
  EXPECT_NE(text.find("Note: Use --no-shape-check or set check_shapes=False to attempt to compare values anyway."),
            std::string::npos);
  SimpleOutputParams loose;
  loose.check_shapes = false;
  EXPECT_TRUE(run(a, b, loose).passed);
  EXPECT_NE(log.text().find("Permuted array of shape: (3, 2) to: (2, 3) using permutation [1, 0]"), std::string::npos);
  // Different ranks, same volume: reshaped.
  EXPECT_TRUE(run(f32({6}, {1, 2, 3, 4, 5, 6}), a, loose).passed);
  EXPECT_NE(log.text().find("Reshaped array from shape: (2, 3) to: (6,)"), std::string::npos);
  // Different volumes: a clear failure instead of numpy's exception.
  auto volume = run(f32({4}, {1, 2, 3, 4}), a, loose);
  EXPECT_FALSE(volume.passed);
  EXPECT_NE(log.text().find("Could not reshape array from shape: (2, 3) to (4,). Skipping reshape."),
            std::string::npos);
}

TEST(CompareSimple, LogBlockLines) {
  LogCapture log;
  auto r = run(f32({1.0f, 2.0f}), f32({1.0f, 2.5f}), with(1e-5, 1e-5));
  EXPECT_FALSE(r.passed);
  std::string text = log.text();
  EXPECT_EQ(text.rfind("[I] Tolerance: [abs=1e-05, rel=1e-05] | Checking elemwise error\n", 0), 0u);
  // abs errors [0, 0.5]; rel [0, 0.5/2.5 = 0.2].
  EXPECT_NE(
      text.find("[I]     Minimum Required Tolerance: elemwise error | [abs=0.5] OR [rel=0.2] (requirements may be "
                "lower if both abs/rel tolerances are set)"),
      std::string::npos);
  EXPECT_NE(text.find("[E] FAILED | Output: 'y' | Difference exceeds tolerance (rel=1e-05, abs=1e-05) | 1 of 2 "
                      "element(s) (50%) exceed both"),
            std::string::npos);
  // Failed: values and histograms at INFO.
  EXPECT_NE(text.find("---- Values ----"), std::string::npos);
  EXPECT_NE(text.find("---- Histogram ----"), std::string::npos);
}

TEST(CompareSimple, PassedOutputHidesHistogramsBelowVerbose) {
  LogCapture log;
  auto r = run(f32({1.0f, 2.0f}), f32({1.0f, 2.0f}));
  EXPECT_TRUE(r.passed);
  std::string text = log.text();
  EXPECT_NE(text.find("[I] PASSED | Output: 'y' | Difference is within tolerance (rel=1e-05, abs=1e-05)"),
            std::string::npos);
  EXPECT_EQ(text.find("---- Histogram ----"), std::string::npos);
  LogCapture verbose(Severity::kVerbose);
  run(f32({1.0f, 2.0f}), f32({1.0f, 2.0f}));
  EXPECT_NE(verbose.text().find("[V]     ---- Histogram ----"), std::string::npos);
}

TEST(CompareSimple, QuantileToleranceLine) {
  LogCapture log;
  SimpleOutputParams p = with(1, 1, ErrorStat::kQuantile);
  p.error_quantile = 0.5;
  run(f32({1, 2}), f32({1, 2}), p);
  EXPECT_NE(log.text().find("Minimum Required Tolerance: quantile error | [abs=0] OR [rel=0] (quantile=0.5)"),
            std::string::npos);
}

TEST(CompareSimple, PerOutputTolerancesWithDefaultKey) {
  LogCapture log;
  SimpleOptions options;
  options.atol = PerOutput<double>::per_name({{"y", 1.0}, {"", 1e-5}});
  options.rtol = PerOutput<double>(0.0);
  IterationResult r0 = iteration("r0", {{"y", f32({1.0f})}, {"z", f32({1.0f})}});
  IterationResult r1 = iteration("r1", {{"y", f32({1.5f})}, {"z", f32({1.5f})}});
  IterationComparison c = simple(options)(r0, r1);
  ASSERT_EQ(c.outputs.size(), 2u);
  EXPECT_TRUE(c.outputs[0].passed);   // y: atol 1
  EXPECT_FALSE(c.outputs[1].passed);  // z: atol 1e-5 from ""
  EXPECT_NE(log.text().find("[E] FAILED | Mismatched outputs: ['z']"), std::string::npos);
}

TEST(CompareSimple, UnknownPerOutputKeysWarn) {
  LogCapture log;
  SimpleOptions options;
  options.atol = PerOutput<double>::per_name({{"nope", 1.0}});
  simple(options)(iteration("r0", {{"y", f32({1.0f})}}), iteration("r1", {{"y", f32({1.0f})}}));
  EXPECT_NE(log.text().find("[W] Extra items in the atol dictionary: {'nope'}."), std::string::npos);
}

TEST(CompareSimple, ErrorStatNames) {
  EXPECT_EQ(parse_error_stat("median"), ErrorStat::kMedian);
  EXPECT_EQ(error_stat_name(ErrorStat::kQuantile), "quantile");
  EXPECT_THROW(parse_error_stat("p99"), InvalidInputError);
}

TEST(CompareSimple, EmptyOutputs) {
  LogCapture log;
  // Nothing to compare: elemwise and max pass (Polygraphy's max of nothing is 0); mean is NaN -> fails.
  EXPECT_TRUE(run(f32(Shape{0}, {}), f32(Shape{0}, {})).passed);
  EXPECT_TRUE(run(f32(Shape{0}, {}), f32(Shape{0}, {}), with(1e-5, 1e-5, ErrorStat::kMax)).passed);
  EXPECT_FALSE(run(f32(Shape{0}, {}), f32(Shape{0}, {}), with(1e-5, 1e-5, ErrorStat::kMean)).passed);
}

TEST(CompareSimple, LargeTensorsMatchBruteForce) {
  // 3M elements (several workers): mismatch count and max errors against a plain loop.
  const int64_t n = 3'000'000;
  std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<std::size_t>(i)] = std::sin(static_cast<float>(i) * 0.001f);
    b[static_cast<std::size_t>(i)] = a[static_cast<std::size_t>(i)] + ((i % 7 == 0) ? 1e-3f : 0.0f);
  }
  Tensor ta = Tensor::from_bytes(DType::kFloat32, Shape{n}, a.data(), a.size() * 4);
  Tensor tb = Tensor::from_bytes(DType::kFloat32, Shape{n}, b.data(), b.size() * 4);
  int64_t mismatches = 0;
  float max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    float d = std::fabs(a[static_cast<std::size_t>(i)] - b[static_cast<std::size_t>(i)]);
    float ref = b[static_cast<std::size_t>(i)] == 0 ? static_cast<float>(2.220446049250313e-16)
                                                    : std::fabs(b[static_cast<std::size_t>(i)]);
    float r = d / ref;
    if (d > 1e-4f && r > 1e-3f) ++mismatches;
    max_abs = std::max(max_abs, d);
  }
  LogCapture log(Severity::kWarning);
  auto r = run(ta, tb, with(1e-4, 1e-3));
  EXPECT_EQ(r.simple->mismatch_count, mismatches);
  EXPECT_EQ(r.simple->max_absdiff, static_cast<double>(max_abs));
  EXPECT_EQ(r.passed, mismatches == 0);
}

}  // namespace
}  // namespace parity::compare
