#include "parity/quantize/abs_histogram.h"

#include <cmath>
#include <limits>
#include <utility>

namespace parity::quantize {

void AbsHistogram::grow_to(double max_abs) {
  if (range_ == 0) {
    range_ = max_abs;
    bins_.assign(kBins, 0);
    bins_[0] = zeros_before_range_;
    zeros_before_range_ = 0;
    return;
  }
  while (max_abs > range_) {
    for (int i = 0; i < kBins / 2; ++i) bins_[i] = bins_[2 * i] + bins_[2 * i + 1];
    for (int i = kBins / 2; i < kBins; ++i) bins_[i] = 0;
    bins_[kBins / 2 - 1] -= at_range_;
    bins_[kBins / 2] += at_range_;
    at_range_ = 0;
    range_ *= 2;
  }
}

namespace {

// The largest finite |x| and the number of finite values.
std::pair<double, int64_t> finite_max_abs(std::span<const float> values) {
  float batch_max = 0;
  int64_t finite = 0;
  for (float v : values) {
    const float a = std::fabs(v);
    const bool is_finite = a <= std::numeric_limits<float>::max();  // false for NaN and infinities
    finite += is_finite;
    batch_max = is_finite && a > batch_max ? a : batch_max;
  }
  return {batch_max, finite};
}

}  // namespace

void AbsHistogram::add_max_only(std::span<const float> values) {
  const auto [batch_max, finite] = finite_max_abs(values);
  non_finite_ += static_cast<int64_t>(values.size()) - finite;
  count_ += finite;
  max_abs_ = std::max(max_abs_, batch_max);
}

void AbsHistogram::add(std::span<const float> values) {
  const auto [batch_max, finite] = finite_max_abs(values);
  non_finite_ += static_cast<int64_t>(values.size()) - finite;
  count_ += finite;
  if (batch_max == 0) {
    if (range_ == 0)
      zeros_before_range_ += finite;
    else
      bins_[0] += finite;
    return;
  }
  max_abs_ = std::max(max_abs_, batch_max);
  if (batch_max > range_) grow_to(batch_max);
  // numpy's bin index: (x - first_edge) * (bins / (last_edge - first_edge)), the top edge in the last bin.
  const double norm = kBins / range_;
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    const double a = std::fabs(v);
    const auto index = static_cast<int64_t>(a * norm);
    ++bins_[static_cast<std::size_t>(std::min<int64_t>(index, kBins - 1))];
    at_range_ += a == range_;
  }
}

}  // namespace parity::quantize
