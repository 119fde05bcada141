#include "parity/quantize/calibration_algorithm.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "parity/core/error.h"

namespace parity::quantize {

CalibrationAlgo parse_calibration_algo(std::string_view name) {
  if (name == "entropy") return CalibrationAlgo::kEntropy;
  if (name == "minmax") return CalibrationAlgo::kMinMax;
  if (name == "percentile") return CalibrationAlgo::kPercentile;
  raise<InvalidInputError>("unknown calibration algorithm '{}'; expected entropy, minmax or percentile", name);
}

std::string calibration_algo_flag_name(CalibrationAlgo algo) {
  switch (algo) {
    case CalibrationAlgo::kEntropy: return "entropy";
    case CalibrationAlgo::kMinMax: return "minmax";
    case CalibrationAlgo::kPercentile: return "percentile";
  }
  return "entropy";
}

std::string calibration_algo_cache_name(CalibrationAlgo algo) {
  switch (algo) {
    case CalibrationAlgo::kEntropy: return "EntropyCalibration2";
    case CalibrationAlgo::kMinMax: return "MinMaxCalibration";
    case CalibrationAlgo::kPercentile: return "PercentileCalibration";
  }
  return "EntropyCalibration2";
}

double amax_percentile(const AbsHistogram& histogram, double percentile) {
  const auto& bins = histogram.bins();
  if (bins.empty()) return 0;
  const double total = static_cast<double>(std::accumulate(bins.begin(), bins.end(), int64_t{0}));
  const double target = total * percentile / 100.0;
  int64_t cumulative = 0;
  for (std::size_t i = 0; i < bins.size(); ++i) {
    cumulative += bins[i];
    if (static_cast<double>(cumulative) >= target)
      return std::min(histogram.max_abs(), static_cast<double>(i + 1) * histogram.bin_width());
  }
  return histogram.max_abs();
}

double amax_entropy(const std::vector<int64_t>& counts, double range) {
  constexpr int kLevels = 128;
  const int n = static_cast<int>(counts.size());
  if (n < kLevels) raise<InvalidInputError>("entropy calibration needs at least {} histogram bins, got {}", kLevels, n);
  std::vector<double> bins(counts.begin(), counts.end());
  bins[0] = bins[1];
  // suffix[i]: the counts of bins i.. (the outliers a candidate of i bins clips into its last bin).
  std::vector<double> suffix(n + 1, 0.0);
  for (int i = n - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + bins[i];

  // Prefix sums over bins 0..j-1 of b, of [b > 0] and of b log b: every level of a candidate is a
  // run of bins, so its sum and its count of non-empty bins come in O(1), and a candidate costs
  // O(128) instead of O(i). With P = the candidate's total (outliers included), Q = the sum of its
  // first i bins and level k's sum L and non-empty bins N, each non-empty bin j < i - 1 of level k
  // adds (b/P) (log b - log P - log(L / (N Q))); bin i - 1, which holds the outliers too, is added
  // apart.
  std::vector<double> sum(n + 1, 0.0), nonzero(n + 1, 0.0), b_log_b(n + 1, 0.0);
  for (int j = 0; j < n; ++j) {
    sum[j + 1] = sum[j] + bins[j];
    nonzero[j + 1] = nonzero[j] + (bins[j] > 0);
    b_log_b[j + 1] = b_log_b[j] + (bins[j] > 0 ? bins[j] * std::log(bins[j]) : 0.0);
  }
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  for (int i = kLevels; i <= n; ++i) {
    const double q_total = sum[i];
    const double p_total = q_total + suffix[i];
    if (q_total == 0) continue;
    const double last = bins[i - 1];
    const double last_p = last + suffix[i];
    if (last == 0 && last_p > 0) continue;  // outliers in an empty bin: Q is 0 where P is not
    // Bins 0..i-2: sum of b log b, minus log P times their sum, minus the levels' log q.
    double divergence = b_log_b[i - 1] - std::log(p_total) * sum[i - 1];
    double last_q = 0;
    for (int level = 0; level < kLevels; ++level) {
      // Bin j is in level floor(j * 128 / i) (numpy.digitize over linspace(0, i, 129)).
      const int lo = static_cast<int>((static_cast<int64_t>(level) * i + kLevels - 1) / kLevels);
      const int hi = static_cast<int>((static_cast<int64_t>(level + 1) * i + kLevels - 1) / kLevels);
      const double level_sum = sum[hi] - sum[lo];
      if (level_sum == 0) continue;
      const double q = level_sum / (nonzero[hi] - nonzero[lo]) / q_total;
      const double without_last = hi == i ? level_sum - last : level_sum;
      divergence -= without_last * std::log(q);
      if (hi == i) last_q = q;
    }
    divergence /= p_total;
    if (last_p > 0) divergence += last_p / p_total * std::log(last_p / p_total / last_q);
    if (divergence <= best) {
      best = divergence;
      best_i = i;
    }
  }
  return static_cast<double>(best_i) * range / n;
}

double amax_from(const AbsHistogram& histogram, const CalibrationSettings& settings) {
  if (histogram.max_abs() == 0) return 0;
  switch (settings.algo) {
    case CalibrationAlgo::kMinMax: return histogram.max_abs();
    case CalibrationAlgo::kPercentile: return amax_percentile(histogram, settings.percentile);
    case CalibrationAlgo::kEntropy:
      return std::min(histogram.max_abs(), amax_entropy(histogram.bins(), histogram.range()));
  }
  return histogram.max_abs();
}

}  // namespace parity::quantize
