// Failing layerwise tensors that are no divergence (parity/compare/layerwise_review.h).
#include "parity/compare/layerwise_review.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "parity/statistics/pair_statistics.h"

namespace parity::compare {
namespace {

// Whether every element where the int64 tensors differ is a value beyond int32's range in one and
// that value clamped to int32 in the other; `count` gets how many elements differ.
bool differs_only_by_int32_clamping(const TensorView& out0, const TensorView& out1, int64_t& count) {
  const auto a = out0.span<int64_t>(), b = out1.span<int64_t>();
  auto clamped = [](int64_t v) {
    return std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  };
  count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    if (clamped(a[i]) != b[i] && clamped(b[i]) != a[i]) return false;
    ++count;
  }
  return count > 0;
}

}  // namespace

void review_layer(LayerwiseEntry& entry, const TensorView& out0, const TensorView& out1,
                  bool infinities_compare_equal) {
  const auto& comparison = entry.comparison;
  if (comparison.passed || !comparison.compared || !comparison.simple || out0.size() != out1.size()) return;
  const SimpleMetrics& metrics = *comparison.simple;

  if (out0.dtype() == DType::kInt64 && out1.dtype() == DType::kInt64) {
    int64_t clamped = 0;
    if (differs_only_by_int32_clamping(out0, out1, clamped))
      entry.not_a_divergence = fmt::format(
          "{} of {} int64 value(s) beyond int32's range differ only by one runner's clamping to int32 (backend-internal "
          "shape arithmetic, such as an INT64_MAX Slice end), not a computed divergence",
          clamped, metrics.element_count);
    return;
  }

  if (metrics.nonfinite_error_count == 0 || infinities_compare_equal) return;
  statistics::PairStatisticsRequest request;
  request.atol = metrics.atol;
  request.rtol = metrics.rtol;
  request.infinities_compare_equal = true;
  const statistics::PairStatistics recount = statistics::compute_pair_statistics(out0, out1, out1.shape(), request);
  entry.infinities_equal_errors =
      LayerwiseEntry::Errors{recount.absdiff.polygraphy.max, recount.reldiff.polygraphy.max};
  if (metrics.check_error_stat == ErrorStat::kElemwise && recount.mismatch_count == 0)
    entry.not_a_divergence = fmt::format(
        "fails only where both runs produced the same infinity ({} element(s): inf - inf is NaN in Polygraphy's "
        "arithmetic; --infinities-compare-equal counts them as equal)",
        metrics.mismatch_count);
}

}  // namespace parity::compare
