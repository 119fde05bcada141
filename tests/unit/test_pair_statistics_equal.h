// Whether a fast path of the pair statistics gave the general kernel's numbers: every statistic,
// count, first index, sign of zero and histogram of both outputs and both errors. Shared by the
// float32 and the bool fast paths' tests.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "parity/core/tensor.h"
#include "../../src/statistics/pair_statistics_internal.h"

namespace parity::statistics::detail {

// `sums_exact` false: the mean and deviations may differ in the last bits (float64 sums in
// another order), everything else must not.
inline void expect_same(const Statistics& fast, const Statistics& general, const std::string& what, bool sums_exact) {
  SCOPED_TRACE(what);
  auto same = [&](double a, double b, const char* name, bool exact) {
    if (std::isnan(a) && std::isnan(b)) return;
    if (exact) EXPECT_EQ(a, b) << name;
    else EXPECT_NEAR(a, b, 1e-12 * std::max(1.0, std::fabs(b))) << name;
  };
  EXPECT_EQ(static_cast<int>(fast.state), static_cast<int>(general.state));
  EXPECT_EQ(fast.count, general.count);
  same(fast.mean, general.mean, "mean", sums_exact);
  same(fast.std_dev, general.std_dev, "std_dev", sums_exact);
  same(fast.variance, general.variance, "variance", sums_exact);
  same(fast.avg_magnitude, general.avg_magnitude, "avg_magnitude", sums_exact);
  same(fast.median, general.median, "median", true);
  same(fast.min, general.min, "min", true);
  same(fast.max, general.max, "max", true);
  EXPECT_EQ(fast.argmin, general.argmin);
  EXPECT_EQ(fast.argmax, general.argmax);
  ASSERT_EQ(fast.quantile_levels, general.quantile_levels);
  for (std::size_t i = 0; i < fast.quantile_values.size(); ++i)
    same(fast.quantile_values[i], general.quantile_values[i], "quantile", true);
  // Signs of zero print differently: they must agree too.
  EXPECT_EQ(std::signbit(fast.median), std::signbit(general.median));
  EXPECT_EQ(std::signbit(fast.min), std::signbit(general.min));
}

inline void expect_same(const Histogram& fast, const Histogram& general, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(fast.valid, general.valid);
  EXPECT_EQ(fast.error, general.error);
  EXPECT_EQ(fast.counts, general.counts);
  EXPECT_EQ(fast.edges, general.edges);
}

inline void expect_same(const TensorSummary& fast, const TensorSummary& general, const std::string& what,
                        bool finite_sums_exact) {
  SCOPED_TRACE(what);
  auto facts = [](const TensorSummary& s) {
    return std::tuple(static_cast<int>(s.dtype), s.shape, s.size, s.is_bool, s.nan_count, s.posinf_count,
                      s.neginf_count, s.excluded_count);
  };
  EXPECT_EQ(facts(fast), facts(general)) << "dtype, shape, size, is_bool, NaN, +inf, -inf, excluded";
  expect_same(fast.polygraphy, general.polygraphy, "polygraphy", true);
  expect_same(fast.finite, general.finite, "finite", finite_sums_exact);
}

// `rel_finite_exact` false: Parity's view of the relative error at non-zero references may sum in
// another float64 order.
inline void expect_same(const PairStatistics& fast, const PairStatistics& general, bool rel_finite_exact) {
  expect_same(fast.out0, general.out0, "out0", true);
  expect_same(fast.out1, general.out1, "out1", true);
  expect_same(fast.absdiff, general.absdiff, "abs", true);
  expect_same(fast.reldiff, general.reldiff, "rel", rel_finite_exact);
  auto facts = [](const PairStatistics& p) {
    return std::tuple(p.mismatch_count, p.zero_reference_count, p.max_absdiff_at_zero_reference, p.absdiff_single,
                      p.reldiff_single, p.reference_floating);
  };
  EXPECT_EQ(facts(fast), facts(general))
      << "mismatches, zero references, largest error at one, float32 errors, floating reference";
  expect_same(fast.histogram0, general.histogram0, "histogram0");
  expect_same(fast.histogram1, general.histogram1, "histogram1");
  expect_same(fast.histogram_abs, general.histogram_abs, "histogram abs");
  expect_same(fast.histogram_rel, general.histogram_rel, "histogram rel");
}

// A fast path's answer against the general kernel's for the same pair. `rel_finite_always_exact`
// false: exact only where no reference is zero (see expect_same above).
inline void expect_general_numbers(const std::optional<PairStatistics>& fast, const Tensor& a, const Tensor& b,
                                   const PairStatisticsRequest& request, bool rel_finite_always_exact) {
  ASSERT_TRUE(fast.has_value()) << "the fast path declined the pair";
  PairStatistics general = general_pair_statistics(a.view(), b.view(), a.shape(), request);
  expect_same(*fast, general, rel_finite_always_exact || general.zero_reference_count == 0);
}

}  // namespace parity::statistics::detail
