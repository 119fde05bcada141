// Statistics of a tensor (or of the error between two tensors) and Polygraphy's text for them.
//
// Two views of the same numbers are kept:
//  - `polygraphy`: exactly what Polygraphy computes: one NaN makes mean/std/median/min/max... NaN,
//    an Inf makes the mean Inf and std/var NaN, float32 sums of squares can overflow to Inf;
//  - `finite`: Parity's view, over the finite values only, with NaN and Inf counted separately
//    (and, for relative errors, the elements whose reference is zero counted and left out).
// When a tensor holds only finite values the two views are equal and print identically.
//
// Arithmetic follows numpy bit for bit where it changes printed digits: the mean and avg-magnitude
// are numpy's float32 pairwise sums (np.mean(dtype=float32): one pairwise tree over a float32 array,
// 8192-value buffers when numpy must cast), float32 work types get numpy's float32 two-pass var/std;
// median/min/max are in the cast-up type (float16 -> float32, small ints -> int32, uint32 ->
// int64); quantiles interpolate in the tensor's own type (numpy's "linear" method). Parity's view
// uses double accumulators over the finite values, except that a tensor whose every element is
// finite (nothing excluded) shows numpy's numbers, so clean data prints as in Polygraphy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parity/core/dtype.h"
#include "parity/core/tensor.h"

namespace parity::statistics {

// Which numbers and text to produce: Polygraphy's, byte for byte, or Parity's (finite values,
// NaN/Inf counts, zero references counted).
enum class StatisticsStyle { kParity, kPolygraphy };

struct Statistics {
  enum class State {
    kValues,          // numbers below are meaningful
    kEmpty,           // the tensor has no elements
    kNoFiniteValues,  // (finite view only) every element is NaN or Inf
  };
  State state = State::kValues;
  int64_t count = 0;  // elements the numbers describe
  double mean = 0, std_dev = 0, variance = 0, median = 0, min = 0, max = 0, avg_magnitude = 0;
  std::vector<int64_t> argmin, argmax;  // multi-dimensional indices of min and max
  // Quantiles (numpy "linear"): always 0.9, 0.95, 0.99, then any extra levels requested.
  std::vector<double> quantile_levels;
  std::vector<double> quantile_values;

  // NaN when `q` was not computed.
  double quantile(double q) const;
};

struct TensorSummary {
  DType dtype = DType::kUndefined;
  Shape shape;
  int64_t size = 0;
  bool is_bool = false;  // no percentiles and no histogram, as in Polygraphy
  // Counts over the elements in Parity's view.
  int64_t nan_count = 0;
  int64_t posinf_count = 0;
  int64_t neginf_count = 0;
  // Elements left out of `finite` for another reason than being NaN/Inf (relative error: the
  // elements whose reference value is zero).
  int64_t excluded_count = 0;
  Statistics polygraphy;
  Statistics finite;

  int64_t inf_count() const { return posinf_count + neginf_count; }
  const Statistics& view(StatisticsStyle style) const {
    return style == StatisticsStyle::kPolygraphy ? polygraphy : finite;
  }
};

struct SummaryOptions {
  bool percentiles = true;               // p90/p95/p99 (always skipped for bool)
  std::vector<double> extra_quantiles;   // further quantile levels in [0, 1]
};

// One streaming pass (plus one refining pass per order statistic level) over `tensor`.
// Throws UnsupportedError for string and complex tensors.
TensorSummary summarize(const TensorView& tensor, const SummaryOptions& options = {});

// The error of `output` against `reference` (same number of elements), in the arithmetic of
// CompareFunc.simple (numpy's promotion of the cast-up types; the relative error divides by
// |reference|, with 2.22e-16 added to zero references): one fused pass plus the refining passes.
// `relative.finite` leaves out the elements whose reference is zero (relative.excluded_count).
struct ErrorSummary {
  TensorSummary absolute;  // |output - reference|
  TensorSummary relative;  // |output - reference| / |reference|
};
ErrorSummary summarize_error(const TensorView& output, const TensorView& reference);

// NaN and infinity counts alone (one pass, no statistics): for checking every tensor of a
// layerwise run. Integer and bool tensors have none; string and complex tensors are not numbers
// here (UnsupportedError, as for summarize).
struct NonFiniteCounts {
  int64_t nan = 0, posinf = 0, neginf = 0;
  bool any() const { return nan || posinf || neginf; }
};
NonFiniteCounts count_nonfinite(const TensorView& tensor);

// "mean=..., std-dev=..., ..., p99=..." (no label, no NaN counts): Polygraphy's numbers text.
std::string format_statistics(const Statistics& statistics, bool is_bool);

// The whole stats line. Polygraphy: "<label> | Stats: mean=..., p99=..." (without "<label> |
// Stats: " when the label is empty, as Polygraphy's validate prints it). Parity: the same over the
// finite values, then " | NaN: n, Inf: m" when there are any and " | k element(s) with zero
// reference (excluded)" for a relative error with zero references; "Stats: no finite values" /
// "Stats: empty tensor" when nothing is left to describe.
std::string format_stats_line(const TensorSummary& summary, StatisticsStyle style, std::string_view label);

// ---- Histograms (numpy.histogram, 10 bins, last bin closed) ----
// A histogram range given explicitly, as Polygraphy gives it (Python numbers: numpy then computes
// the edges in float64 and rounds them to the data's type).
struct HistogramRange {
  double first = 0;
  double last = 0;
};

struct Histogram {
  // False when numpy would refuse (a non-finite range): Polygraphy then prints an empty line.
  bool valid = false;
  std::string error;           // numpy's message when not valid
  std::array<double, 11> edges{};
  std::array<int64_t, 10> counts{};
  int64_t total() const;
};

// Histogram of `tensor`'s values in `range` (default: the tensor's own min/max, as np.histogram
// picks it). Polygraphy style bins every value numpy would; Parity style only the finite values
// (and the default range is that of the finite values).
Histogram histogram(const TensorView& tensor, const std::optional<HistogramRange>& range, StatisticsStyle style);

// Polygraphy's histogram text ("---- Histogram ----\nBin Range ...\n(...) |  n | ###\n..."),
// without a trailing newline. "" for an invalid histogram and "None" when every count is zero
// (both exactly what Polygraphy logs then).
std::string format_histogram(const Histogram& histogram);

// The range Polygraphy gives the histograms of two compared outputs: (min(min0, min1),
// max(max0, max1)) with Python's min/max (a NaN in the first argument wins, in the second it is
// ignored). Parity style: over the finite values. nullopt when neither tensor has a value.
std::optional<HistogramRange> common_histogram_range(const TensorSummary& out0, const TensorSummary& out1,
                                                     StatisticsStyle style);

}  // namespace parity::statistics
