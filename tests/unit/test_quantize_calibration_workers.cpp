// Calibration on several runners at once (quantize::calibrate over a span of runners) and the rule
// that picks how many (calibration_threads): the statistics are those of the feeds run one at a
// time in order, whatever the stacking and the number of runners.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "parity/quantize/abs_histogram.h"
#include "parity/quantize/calibration_threads.h"
#include "parity/quantize/calibrator.h"
#include "test_onnxrt_runner_helpers.h"

namespace parity::quantize {
namespace {

using runtime::onnxrt_testing::chain_model;

constexpr std::size_t kGiB = std::size_t{1} << 30;

TEST(CalibrationThreads, OneWorkerPerCoreWhereMemoryAllows) {
  const CalibrationThreads threads = calibration_threads(8, 100 << 20, 64 * kGiB);
  EXPECT_EQ(threads.workers, 8);
  EXPECT_EQ(threads.intra_op_threads, 1);
}

TEST(CalibrationThreads, MemoryBoundsTheCopiesOfTheModelAndTheCoresAreSharedOut) {
  // A quarter of 10 GiB holds two copies of a 1 GiB model: two workers of 4 threads each.
  const CalibrationThreads two = calibration_threads(8, kGiB, 10 * kGiB);
  EXPECT_EQ(two.workers, 2);
  EXPECT_EQ(two.intra_op_threads, 4);
  // Not even one copy: one worker on the backend's default threads.
  const CalibrationThreads one = calibration_threads(8, 4 * kGiB, 8 * kGiB);
  EXPECT_EQ(one.workers, 1);
  EXPECT_EQ(one.intra_op_threads, 0);
}

TEST(CalibrationThreads, UnknownMemoryOrOneCore) {
  EXPECT_EQ(calibration_threads(4, kGiB, 0).workers, 4);
  const CalibrationThreads single = calibration_threads(1, 1, 64 * kGiB);
  EXPECT_EQ(single.workers, 1);
  EXPECT_EQ(single.intra_op_threads, 0);
  EXPECT_EQ(calibration_threads(0, 1, 64 * kGiB).workers, 1);
}

// `count` feeds x [2, 4] ~ N(0, 1); the first one a quarter as wide, so that a histogram whose range
// is set by the first feed alone doubles it later, and one set by a stack of feeds does not.
std::vector<NamedTensors> feeds(std::size_t count) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<NamedTensors> out;
  for (std::size_t i = 0; i < count; ++i) {
    Tensor x = Tensor::zeros(DType::kFloat32, {2, 4});
    for (float& v : x.mutable_span<float>()) v = normal(rng) * (i == 0 ? 0.25f : 1.0f);
    out.push_back({{"x", std::move(x)}});
  }
  return out;
}

CalibrationResult calibrate_on(std::size_t runner_count, const std::vector<NamedTensors>& batches) {
  std::vector<std::unique_ptr<runtime::OnnxrtRunner>> runners;
  std::vector<runtime::Runner*> pointers;
  for (std::size_t i = 0; i < runner_count; ++i) {
    runtime::OnnxrtOptions options;
    options.intra_op_threads = 1;
    runners.push_back(std::make_unique<runtime::OnnxrtRunner>(chain_model().loader(), options));
    pointers.push_back(runners.back().get());
  }
  CalibrationSettings settings;
  settings.algo = CalibrationAlgo::kEntropy;
  return calibrate(pointers, {"r", "m"}, batches, settings, {"x", "y"});
}

TEST(CalibrationWorkers, StatisticsEqualThoseOfTheFeedsOneAtATimeWhateverTheRunners) {
  // chain_model: r = relu(x), m = 2 r (both exact in float32); its samples stay apart, so the 200
  // feeds run in stacks, spread over the runners.
  const std::vector<NamedTensors> batches = feeds(200);
  AbsHistogram r_expected, m_expected;
  for (const auto& feed : batches) {
    std::vector<float> r, m;
    for (float v : feed.front().second.span<float>()) {
      r.push_back(std::max(v, 0.0f));
      m.push_back(2 * std::max(v, 0.0f));
    }
    r_expected.add(r);
    m_expected.add(m);
  }
  AbsHistogram stacked_whole;  // what folding each stack of 16 feeds as one batch would give
  for (std::size_t b = 0; b < batches.size(); b += 16) {
    std::vector<float> m;
    for (std::size_t i = b; i < std::min(b + 16, batches.size()); ++i)
      for (float v : batches[i].front().second.span<float>()) m.push_back(2 * std::max(v, 0.0f));
    stacked_whole.add(m);
  }
  ASSERT_NE(stacked_whole.range(), m_expected.range());  // the test can tell the two apart

  for (std::size_t runners : {1, 3}) {
    SCOPED_TRACE(runners);
    const CalibrationResult result = calibrate_on(runners, batches);
    EXPECT_EQ(result.batches, 200);
    const AbsHistogram& r = result.histograms.at("r");
    const AbsHistogram& m = result.histograms.at("m");
    EXPECT_EQ(r.count(), r_expected.count());
    EXPECT_EQ(r.range(), r_expected.range());
    EXPECT_EQ(r.bins(), r_expected.bins());
    EXPECT_EQ(m.range(), m_expected.range());
    EXPECT_EQ(m.bins(), m_expected.bins());
    EXPECT_EQ(m.max_abs(), m_expected.max_abs());
  }
}

TEST(CalibrationWorkers, AFailingInferenceOnAnyRunnerIsRaised) {
  // A feed whose second dimension the model does not take (it stacks with no other feed): its
  // inference fails on whichever runner took it; the error reaches the caller and no thread is left
  // waiting.
  std::vector<NamedTensors> batches = feeds(100);
  batches[70] = {{"x", Tensor::zeros(DType::kFloat32, {2, 5})}};
  EXPECT_THROW(calibrate_on(3, batches), Error);
}

}  // namespace
}  // namespace parity::quantize
