#include "parity/compare/dataset_statistics.h"

#include <cmath>

namespace parity::compare {
namespace {

const double kGamma = (1 + kQuantileSketchAccuracy) / (1 - kQuantileSketchAccuracy);
const double kLogGamma = std::log(kGamma);

// A bucket's value: the point whose relative distance to both of its ends is the accuracy.
double bucket_value(int key) { return 2 * std::pow(kGamma, key) / (kGamma + 1); }

nlohmann::json counts_to_json(const std::map<int, uint64_t>& counts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, count] : counts) out.push_back({key, count});
  return out;
}

std::map<int, uint64_t> counts_from_json(const nlohmann::json& json) {
  std::map<int, uint64_t> out;
  for (const auto& entry : json) out[entry.at(0).get<int>()] += entry.at(1).get<uint64_t>();
  return out;
}

}  // namespace

// Shewchuk's algorithm as Python's math.fsum keeps it: each addition leaves the exact sum as
// non-overlapping partials; value() rounds their sum once (with fsum's half-way correction).
void ExactSum::add(double x) {
  std::size_t kept = 0;
  for (double y : partials_) {
    if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
    const double high = x + y;
    const double low = y - (high - x);
    if (low != 0) partials_[kept++] = low;
    x = high;
  }
  partials_.resize(kept);
  partials_.push_back(x);
}

void ExactSum::merge(const ExactSum& other) {
  for (double partial : other.partials_) add(partial);
}

double ExactSum::value() const {
  if (partials_.empty()) return 0;
  std::size_t n = partials_.size();
  double high = partials_[--n];
  double low = 0;
  while (n > 0) {
    const double x = high;
    const double y = partials_[--n];
    high = x + y;
    const double y_rounded = high - x;
    low = y - y_rounded;
    if (low != 0) break;
  }
  // Half-way cases round to even in the sum of the partials left below, as math.fsum does.
  if (n > 0 && ((low < 0 && partials_[n - 1] < 0) || (low > 0 && partials_[n - 1] > 0))) {
    const double y = low * 2;
    const double x = high + y;
    if (y == x - high) high = x;
  }
  return high;
}

nlohmann::json ExactSum::to_json() const { return partials_; }

ExactSum ExactSum::from_json(const nlohmann::json& json) {
  ExactSum sum;
  for (const auto& partial : json) sum.add(partial.get<double>());
  return sum;
}

ErrorSummary ErrorSummary::of_sample(const std::vector<double>& values, std::size_t sample) {
  ErrorSummary summary;
  double sum = 0, sum_of_squares = 0;
  for (double value : values) {
    if (!std::isfinite(value)) {
      ++summary.nonfinite;
      continue;
    }
    ++summary.count;
    sum += value;
    sum_of_squares += value * value;
    if (value < summary.min) summary.min = value;
    if (value > summary.max) summary.max = value;
    if (value <= 0) {
      ++summary.zeros;
      continue;
    }
    ++summary.decades[static_cast<int>(std::floor(std::log10(value)))];
    ++summary.buckets[static_cast<int>(std::ceil(std::log(value) / kLogGamma))];
  }
  summary.sum.add(sum);
  summary.sum_of_squares.add(sum_of_squares);
  if (summary.count > 0) summary.min_sample = summary.max_sample = sample;
  return summary;
}

void ErrorSummary::merge(const ErrorSummary& other) {
  count += other.count;
  nonfinite += other.nonfinite;
  sum.merge(other.sum);
  sum_of_squares.merge(other.sum_of_squares);
  // Ties keep the lower sample, so the order of merging does not matter.
  if (other.min < min || (other.min == min && other.min_sample < min_sample)) {
    min = other.min;
    min_sample = other.min_sample;
  }
  if (other.max > max || (other.max == max && other.max_sample < max_sample)) {
    max = other.max;
    max_sample = other.max_sample;
  }
  zeros += other.zeros;
  for (const auto& [key, n] : other.decades) decades[key] += n;
  for (const auto& [key, n] : other.buckets) buckets[key] += n;
}

double ErrorSummary::mean() const { return count ? sum.value() / static_cast<double>(count) : NAN; }

double ErrorSummary::variance() const {
  if (!count) return NAN;
  const double m = mean();
  return std::max(0.0, sum_of_squares.value() / static_cast<double>(count) - m * m);
}

double ErrorSummary::quantile(double q) const {
  if (!count) return NAN;
  const auto rank = static_cast<uint64_t>(std::floor(q * static_cast<double>(count - 1)));
  if (rank < zeros) return 0;
  uint64_t seen = zeros;
  for (const auto& [key, n] : buckets) {
    seen += n;
    if (rank < seen) return bucket_value(key);
  }
  return max;
}

nlohmann::json ErrorSummary::to_json() const {
  nlohmann::json out{{"count", count},
                     {"nonfinite", nonfinite},
                     {"sum", sum.to_json()},
                     {"sum_of_squares", sum_of_squares.to_json()},
                     {"zeros", zeros},
                     {"decades", counts_to_json(decades)},
                     {"buckets", counts_to_json(buckets)}};
  if (count > 0) {
    out["min"] = min;
    out["min_sample"] = min_sample;
    out["max"] = max;
    out["max_sample"] = max_sample;
  }
  return out;
}

ErrorSummary ErrorSummary::from_json(const nlohmann::json& json) {
  ErrorSummary summary;
  summary.count = json.at("count").get<uint64_t>();
  summary.nonfinite = json.at("nonfinite").get<uint64_t>();
  summary.sum = ExactSum::from_json(json.at("sum"));
  summary.sum_of_squares = ExactSum::from_json(json.at("sum_of_squares"));
  summary.zeros = json.at("zeros").get<uint64_t>();
  summary.decades = counts_from_json(json.at("decades"));
  summary.buckets = counts_from_json(json.at("buckets"));
  if (summary.count > 0) {
    summary.min = json.at("min").get<double>();
    summary.min_sample = json.at("min_sample").get<std::size_t>();
    summary.max = json.at("max").get<double>();
    summary.max_sample = json.at("max_sample").get<std::size_t>();
  }
  return summary;
}

}  // namespace parity::compare
