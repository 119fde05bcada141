// Dataset statistics merged from per-sample parts: the same numbers whatever the order and split
// (exact sums, counts, extremes, histogram and sketch buckets), and sketch quantiles within their
// stated relative accuracy of the element of that rank.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "parity/compare/dataset_statistics.h"

namespace parity::compare {
namespace {

std::vector<std::vector<double>> random_samples(unsigned seed, std::size_t samples, std::size_t size) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> magnitude(-10, 4);
  std::vector<std::vector<double>> out(samples);
  for (auto& sample : out)
    for (std::size_t i = 0; i < size; ++i) sample.push_back(random() % 7 == 0 ? 0.0 : magnitude(random));
  return out;
}

ErrorSummary merged(const std::vector<std::vector<double>>& samples, const std::vector<std::size_t>& order) {
  ErrorSummary summary;
  for (std::size_t index : order) summary.merge(ErrorSummary::of_sample(samples[index], index));
  return summary;
}

TEST(ExactSum, DoesNotDependOnTheOrderOfTerms) {
  std::vector<double> terms{1e16, 1.0, -1e16, 3.5, 1e-8, 2.0 / 3.0};
  ExactSum forward, backward;
  for (double term : terms) forward.add(term);
  for (auto it = terms.rbegin(); it != terms.rend(); ++it) backward.add(*it);
  EXPECT_EQ(forward.value(), backward.value());
  EXPECT_EQ(forward.value(), 1.0 + 3.5 + 1e-8 + 2.0 / 3.0);  // the big terms cancel exactly
  ExactSum round_trip = ExactSum::from_json(forward.to_json());
  EXPECT_EQ(round_trip.value(), forward.value());
}

TEST(ErrorSummary, MergingInAnyOrderGivesTheSameSummary) {
  auto samples = random_samples(3, 64, 257);
  std::vector<std::size_t> order(samples.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const ErrorSummary in_order = merged(samples, order);
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  const ErrorSummary shuffled = merged(samples, order);
  // Bit for bit, not approximately.
  EXPECT_EQ(in_order.count, shuffled.count);
  EXPECT_EQ(in_order.mean(), shuffled.mean());
  EXPECT_EQ(in_order.variance(), shuffled.variance());
  EXPECT_EQ(in_order.max, shuffled.max);
  EXPECT_EQ(in_order.max_sample, shuffled.max_sample);
  EXPECT_EQ(in_order.min, shuffled.min);
  EXPECT_EQ(in_order.decades, shuffled.decades);
  EXPECT_EQ(in_order.buckets, shuffled.buckets);
  EXPECT_EQ(in_order.zeros, shuffled.zeros);
  // Through JSON (as records cross from workers) nothing changes either.
  const ErrorSummary through_json = ErrorSummary::from_json(shuffled.to_json());
  EXPECT_EQ(through_json.mean(), in_order.mean());
  EXPECT_EQ(through_json.buckets, in_order.buckets);
}

TEST(ErrorSummary, ExtremesAndMeanMatchTheWholeData) {
  auto samples = random_samples(11, 16, 100);
  std::vector<std::size_t> order(samples.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const ErrorSummary summary = merged(samples, order);
  std::vector<double> all;
  for (const auto& sample : samples) all.insert(all.end(), sample.begin(), sample.end());
  EXPECT_EQ(summary.count, all.size());
  EXPECT_EQ(summary.max, *std::max_element(all.begin(), all.end()));
  long double sum = 0;
  for (double value : all) sum += value;
  EXPECT_NEAR(summary.mean(), static_cast<double>(sum / all.size()), 1e-12 * std::fabs(summary.mean()));
}

TEST(ErrorSummary, QuantilesAreWithinTheSketchAccuracy) {
  auto samples = random_samples(7, 32, 500);
  std::vector<std::size_t> order(samples.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const ErrorSummary summary = merged(samples, order);
  std::vector<double> all;
  for (const auto& sample : samples) all.insert(all.end(), sample.begin(), sample.end());
  std::sort(all.begin(), all.end());
  for (double q : {0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0}) {
    const double exact = all[static_cast<std::size_t>(std::floor(q * static_cast<double>(all.size() - 1)))];
    EXPECT_LE(std::fabs(summary.quantile(q) - exact), kQuantileSketchAccuracy * exact * (1 + 1e-12))
        << "q=" << q << " exact=" << exact;
  }
}

TEST(ErrorSummary, NonFiniteValuesAreCountedApart) {
  const ErrorSummary summary = ErrorSummary::of_sample({1.0, NAN, INFINITY, 3.0}, 4);
  EXPECT_EQ(summary.count, 2u);
  EXPECT_EQ(summary.nonfinite, 2u);
  EXPECT_EQ(summary.mean(), 2.0);
  EXPECT_EQ(summary.max_sample, 4u);
}

}  // namespace
}  // namespace parity::compare
