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

  std::vector<double> level_sum(kLevels), level_nonzero(kLevels);
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  for (int i = kLevels; i <= n; ++i) {
    std::fill(level_sum.begin(), level_sum.end(), 0.0);
    std::fill(level_nonzero.begin(), level_nonzero.end(), 0.0);
    // Bin j falls in level floor(j * 128 / i) (numpy.digitize over linspace(0, i, 129)).
    for (int j = 0; j < i; ++j) {
      if (bins[j] == 0) continue;
      const int level = static_cast<int>(static_cast<int64_t>(j) * kLevels / i);
      level_sum[level] += bins[j];
      level_nonzero[level] += 1;
    }
    double q_total = 0;
    for (int level = 0; level < kLevels; ++level) q_total += level_sum[level];
    const double p_total = q_total + suffix[i];
    if (p_total == 0 || q_total == 0) continue;
    double divergence = 0;
    for (int j = 0; j < i; ++j) {
      double p = bins[j];
      if (j == i - 1) p += suffix[i];
      if (p == 0) continue;
      p /= p_total;
      double q = 0;
      if (bins[j] != 0) {
        const int level = static_cast<int>(static_cast<int64_t>(j) * kLevels / i);
        q = level_sum[level] / level_nonzero[level] / q_total;
      }
      if (q == 0) {
        divergence = std::numeric_limits<double>::infinity();
        break;
      }
      divergence += p * std::log(p / q);
    }
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
