// Statistics of a tensor pair: the fused two-tensor kernel behind CompareFunc.simple. One pass
// computes, per element, Polygraphy's absolute and relative error in numpy's types and feeds the
// statistics of both outputs and both errors plus the count of elements failing the tolerances;
// refining passes give exact medians and quantiles and, when asked, the histograms.
#pragma once

#include <optional>
#include <vector>

#include "parity/core/tensor.h"
#include "parity/statistics/statistics.h"

namespace parity::statistics {

// Polygraphy's epsilon added to zero reference values before dividing.
constexpr double kRelativeEpsilon = 2.220446049250313e-16;

// What the caller asks for; every field is the caller's decision, and nothing in this layer
// reads the logger or decides a verdict.
struct PairStatisticsRequest {
  // The comparison function's elementwise rule (Polygraphy's elemwise check): an element fails
  // when its absolute error exceeds `atol` and its relative error exceeds `rtol`, a NaN error
  // exceeding either, each compared in the error's numpy type. The kernels count the failing
  // elements (PairStatistics::mismatch_count) in their first pass, where the errors are at hand;
  // what the count means for the output is the comparison function's verdict.
  double atol = 1e-5;
  double rtol = 1e-5;
  bool infinities_compare_equal = false;  // Polygraphy's: an Inf equal to its reference has no error
  std::optional<double> error_quantile;   // also compute this quantile of both errors
  // Histograms, asked for by the caller (the comparison asks when it will log them).
  bool histograms = false;                     // compute the four display histograms
  bool histograms_only_if_mismatched = false;  // ...unless no element fails the rule above
  StatisticsStyle histogram_style = StatisticsStyle::kParity;
  bool small_values = false;  // materialise absdiff/reldiff (for "---- Values ----")
};

struct PairStatistics {
  TensorSummary out0, out1, absdiff, reldiff;
  bool absdiff_single = false;  // the absolute error's numpy type is float32
  bool reldiff_single = false;  // the relative error's numpy type is float32
  int64_t mismatch_count = 0;
  int64_t zero_reference_count = 0;
  double max_absdiff_at_zero_reference = 0;
  bool reference_floating = false;  // out1 is floating (so Polygraphy adds the epsilon)
  Histogram histogram0, histogram1, histogram_abs, histogram_rel;
  Tensor absdiff_values, reldiff_values;  // when small_values
};

// `out0` and `out1` must have the same number of elements; `shape` is the shape both are viewed
// with (indices of min/max refer to it).
PairStatistics compute_pair_statistics(const TensorView& out0, const TensorView& out1, const Shape& shape,
                                       const PairStatisticsRequest& request);

// Flat indices of the elements failing the request's elementwise rule (Polygraphy's elemwise
// mismatch mask), at most `limit` of them.
std::vector<int64_t> mismatch_indices(const TensorView& out0, const TensorView& out1,
                                      const PairStatisticsRequest& request, int64_t limit);

// Sums over both outputs in double (after cast-up), for the distance and quality comparisons:
// sum (a-b)^2, a*b, a^2, b^2.
struct PairSums {
  double squared_error = 0, dot = 0, square0 = 0, square1 = 0;
  int64_t count = 0;
};
PairSums pair_sums(const TensorView& a, const TensorView& b);

}  // namespace parity::statistics
