// Statistics of an output's errors over a whole dataset, merged from per-sample parts in any order
// and any split (processes, Ray actors) to the same numbers a single process gets:
//   - counts, min, max (with the sample that holds them), the decade histogram: exact;
//   - mean, variance and std-dev: from the sum and the sum of squares of the samples' own sums
//     (each a double added in element order), added exactly (Shewchuk's partials, Python's
//     math.fsum) and rounded once, so the order samples arrive in changes nothing;
//   - median and percentiles: from a DDSketch-style log-bucket sketch (Masson et al., 2019) with
//     relative accuracy 1%: its buckets' counts merge exactly, and the value it gives for rank
//     floor(q * (n - 1)) is within 1% (relative) of the element of that rank.
// Values are non-negative (absolute and relative differences); NaN and infinities are counted
// apart and left out of the rest.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

namespace parity::compare {

// A sum of doubles rounded once: the same value whatever the order of the terms.
class ExactSum {
 public:
  void add(double value);
  void merge(const ExactSum& other);
  double value() const;
  nlohmann::json to_json() const;  // the partials
  static ExactSum from_json(const nlohmann::json& json);

 private:
  std::vector<double> partials_;  // non-overlapping, increasing magnitude
};

// The sketch's relative accuracy.
inline constexpr double kQuantileSketchAccuracy = 0.01;

struct ErrorSummary {
  static constexpr std::size_t kNoSample = std::numeric_limits<std::size_t>::max();

  uint64_t count = 0;      // finite values
  uint64_t nonfinite = 0;  // NaN or infinite values
  ExactSum sum, sum_of_squares;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::size_t min_sample = kNoSample, max_sample = kNoSample;
  uint64_t zeros = 0;
  std::map<int, uint64_t> decades;  // floor(log10(value)) -> count, for values > 0
  std::map<int, uint64_t> buckets;  // the sketch: ceil(log_gamma(value)) -> count, for values > 0

  // The summary of one sample's values.
  static ErrorSummary of_sample(const std::vector<double>& values, std::size_t sample);
  void merge(const ErrorSummary& other);

  double mean() const;
  double variance() const;  // population variance, as numpy's var
  // The sketch's value for rank floor(q * (count - 1)), 0 <= q <= 1; NaN when count is 0.
  double quantile(double q) const;

  nlohmann::json to_json() const;
  static ErrorSummary from_json(const nlohmann::json& json);
};

}  // namespace parity::compare
