// What the general pair-statistics kernel (pair_statistics.cpp) and its fast paths
// (fast/pair_statistics_float.cpp, fast/pair_statistics_bool.cpp) share: the display histograms'
// ranges and the final summaries. A fast path answers only what it can compute bit for bit as the
// general kernel does, and declines (an empty optional) otherwise.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "parity/statistics/pair_statistics.h"
#include "streaming_statistics.h"

namespace parity::statistics::detail {

// The four numpy.histogram specs Polygraphy's output logging uses, from the first pass's state.
struct DisplayHistograms {
  BinSpec spec0, spec1, spec_abs, spec_rel;
  double range_first = 0, range_last = 0, abs_first = 0, abs_last = 0, rel_first = 0, rel_last = 0;
  bool count = false;        // the counts are wanted (histograms requested, and not skipped as passing)
  bool parity_bins = false;  // Parity's style: relative errors at zero references are not binned
};
DisplayHistograms plan_display_histograms(const PairStatisticsRequest& request, int64_t n, DType dtype0, DType dtype1,
                                          Work abs_work, Work rel_work, const StreamAccumulator& a,
                                          const StreamAccumulator& b, const StreamAccumulator& abs,
                                          const StreamAccumulator& rel_all, const StreamAccumulator& rel_nonzero,
                                          int64_t mismatches);

// The first pass's state of the five streams (rel_all: every relative error; rel_nonzero: those
// at non-zero references) and the values their order statistics select.
struct PairStreams {
  const StreamAccumulator* a = nullptr;
  const StreamAccumulator* b = nullptr;
  const StreamAccumulator* abs = nullptr;
  const StreamAccumulator* rel_nonzero = nullptr;
  const StreamAccumulator* rel_all = nullptr;
  RankValue value0, value1, value_abs, value_rel_nonzero, value_rel_all;
  void point_at(const StreamAccumulator& out0, const StreamAccumulator& out1, const StreamAccumulator& absolute,
                const StreamAccumulator& relative_nonzero, const StreamAccumulator& relative_all) {
    a = &out0;
    b = &out1;
    abs = &absolute;
    rel_nonzero = &relative_nonzero;
    rel_all = &relative_all;
  }
  std::array<NumpyNumbers, 4> numbers;  // out0, out1, abs, rel
  int64_t mismatches = 0, zero_references = 0;
  double max_abs_at_zero = 0;
};
struct PairTypes {
  DType dtype0 = DType::kFloat32, dtype1 = DType::kFloat32;
  Work abs_work = Work::kFloat32, rel_work = Work::kFloat32;
  bool xor_error = false;           // bool - bool: the error is a logical xor
  bool reference_floating = false;  // out1 is floating (so Polygraphy adds the epsilon)
};
// The error levels (the requested error quantile) both error streams also need.
std::vector<double> error_levels(const PairStatisticsRequest& request);
// Display levels of a stream (p90/p95/p99 unless bool) plus, for errors, the error levels.
std::vector<double> stream_levels(bool is_bool, const std::vector<double>& extra);

PairStatistics assemble_pair_statistics(const PairStatisticsRequest& request, int64_t n, const Shape& shape,
                                        const PairTypes& types, const PairStreams& streams,
                                        const DisplayHistograms& display,
                                        const std::array<std::array<int64_t, 10>, 4>& bin_counts);

// The general kernel: every dtype pair, NaN and Inf (compute_pair_statistics tries the fast path first).
PairStatistics general_pair_statistics(const TensorView& a, const TensorView& b, const Shape& shape,
                                       const PairStatisticsRequest& request);
// The general kernel for the pairs whose first output works in T0 (pair_statistics_kernel.h; one
// explicit instantiation per work type, in pair_statistics_kernel_*.cpp), and the indices of its
// mismatches.
template <typename T0>
PairStatistics general_pair_statistics_first(const TensorView& a, const TensorView& b, const Shape& shape,
                                             const PairStatisticsRequest& request);
template <typename T0>
std::vector<int64_t> mismatch_indices_first(const TensorView& a, const TensorView& b,
                                            const PairStatisticsRequest& request, int64_t limit);

// The float32 x float32 fast path: vectorised chunk kernels, two passes, order statistics from a
// sample's windows. Empty when it does not apply (other dtypes, NaN/Inf, float32 sums that
// overflow, a window that missed its rank): the general kernel then computes the same numbers.
std::optional<PairStatistics> float_pair_statistics(const TensorView& a, const TensorView& b, const Shape& shape,
                                                    const PairStatisticsRequest& request);

// The bool x bool fast path: every number from the counts of the four kinds of pair. Empty when
// it does not apply (other dtypes, bytes other than 0 and 1, more than 2^24 values, the values
// themselves requested).
std::optional<PairStatistics> bool_pair_statistics(const TensorView& a, const TensorView& b, const Shape& shape,
                                                   const PairStatisticsRequest& request);

}  // namespace parity::statistics::detail
