// The bool x bool fast path of the pair statistics against the general kernel: every number equal,
// on masks of every mix (random, in runs, constant, identical, all references zero or none), with
// each request the comparison makes, at sizes around the copy limit and the worker ranges, and
// with several compute threads (other worker ranges).
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "parity/core/tensor.h"
#include "parity/core/thread_pool.h"
#include "../../src/statistics/pair_statistics_internal.h"
#include "test_pair_statistics_equal.h"

namespace parity::statistics::detail {
namespace {

void check(const Tensor& a, const Tensor& b, const PairStatisticsRequest& request, const std::string& label) {
  SCOPED_TRACE(label);
  expect_general_numbers(bool_pair_statistics(a.view(), b.view(), a.shape(), request), a, b, request, true);
}

// x: ones with probability `ones`; y: x with each value flipped with probability `flips`. `run`
// > 1 draws once per run of that many values (masks come in blocks).
std::pair<Tensor, Tensor> make_masks(int64_t n, double ones, double flips, int64_t run, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution one(ones), flip(flips);
  Tensor a = Tensor::zeros(DType::kBool, Shape{n});
  Tensor b = Tensor::zeros(DType::kBool, Shape{n});
  uint8_t* x = a.mutable_data<uint8_t>();
  uint8_t* y = b.mutable_data<uint8_t>();
  uint8_t xv = 0, yv = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % run == 0) {
      xv = one(rng) ? 1 : 0;
      yv = flip(rng) ? static_cast<uint8_t>(1 - xv) : xv;
    }
    x[i] = xv;
    y[i] = yv;
  }
  return {std::move(a), std::move(b)};
}

std::vector<PairStatisticsRequest> requests() {
  std::vector<PairStatisticsRequest> out;
  for (StatisticsStyle style : {StatisticsStyle::kPolygraphy, StatisticsStyle::kParity}) {
    PairStatisticsRequest request;
    request.histograms = true;
    request.histogram_style = style;
    out.push_back(request);
    request.error_quantile = 0.75;
    request.histograms_only_if_mismatched = true;
    out.push_back(request);
  }
  PairStatisticsRequest plain;
  out.push_back(plain);
  plain.atol = 1;  // no element fails on its absolute error
  out.push_back(plain);
  plain.atol = plain.rtol = -1;  // every element fails
  plain.histograms = true;
  out.push_back(plain);
  return out;
}

TEST(BoolPairStatistics, MatchesTheGeneralKernel) {
  struct Mix {
    double ones, flips;
    int64_t run;
  };
  // Random, mostly agreeing, in runs, x all ones or zeros, y the opposite of x, identical.
  const Mix mixes[] = {{0.3, 0.01, 1}, {0.5, 0.5, 1}, {0.2, 0.05, 97}, {1.0, 0.0, 1}, {0.0, 0.0, 1},
                       {0.0, 1.0, 1},  {1.0, 1.0, 1}, {0.7, 0.0, 1},    {0.5, 0.3, 5000}};
  const int64_t sizes[] = {1, 2, 3, 17, 100, 1000, 16384, 16385, 65536, 65537, 300001};
  uint32_t seed = 1;
  for (int64_t n : sizes) {
    for (const Mix& mix : mixes) {
      auto [a, b] = make_masks(n, mix.ones, mix.flips, mix.run, seed++);
      int index = 0;
      for (const PairStatisticsRequest& request : requests())
        check(a, b, request,
              "n=" + std::to_string(n) + " ones=" + std::to_string(mix.ones) + " flips=" + std::to_string(mix.flips) +
                  " run=" + std::to_string(mix.run) + " request " + std::to_string(index++));
    }
  }
}

TEST(BoolPairStatistics, OtherWorkerRanges) {
  const int before = compute_threads();
  auto [a, b] = make_masks(1 << 20, 0.4, 0.1, 3, 5);
  for (int threads : {1, 3, 4}) {
    set_compute_threads(threads);
    for (const PairStatisticsRequest& request : requests()) check(a, b, request, std::to_string(threads) + " threads");
  }
  set_compute_threads(before);
}

TEST(BoolPairStatistics, TheComparisonTakesIt) {
  // compute_pair_statistics answers two bool tensors through this path: the same numbers.
  auto [a, b] = make_masks(526000, 0.3, 0.01, 1, 9);
  PairStatisticsRequest request;
  request.histograms = true;
  expect_same(compute_pair_statistics(a.view(), b.view(), a.shape(), request),
              general_pair_statistics(a.view(), b.view(), a.shape(), request), true);
}

TEST(BoolPairStatistics, DeclinesWhatItCannotDo) {
  auto [a, b] = make_masks(1000, 0.5, 0.1, 1, 3);
  // A byte that is neither 0 nor 1 (bool data written raw): the general kernel takes its value.
  a.mutable_data<uint8_t>()[500] = 2;
  EXPECT_FALSE(bool_pair_statistics(a.view(), b.view(), a.shape(), {}).has_value());
  EXPECT_FALSE(bool_pair_statistics(b.view(), a.view(), a.shape(), {}).has_value());
  // The error values themselves requested (the "---- Values ----" of small outputs).
  PairStatisticsRequest values;
  values.small_values = true;
  EXPECT_FALSE(bool_pair_statistics(b.view(), b.view(), b.shape(), values).has_value());
  // Other dtypes.
  Tensor bytes = Tensor::zeros(DType::kUInt8, Shape{1000});
  EXPECT_FALSE(bool_pair_statistics(bytes.view(), b.view(), b.shape(), {}).has_value());
  EXPECT_FALSE(bool_pair_statistics(b.view(), bytes.view(), b.shape(), {}).has_value());
  // Nothing to count, and more values than numpy's float32 sums of them keep exact.
  Tensor empty = Tensor::zeros(DType::kBool, Shape{0});
  EXPECT_FALSE(bool_pair_statistics(empty.view(), empty.view(), empty.shape(), {}).has_value());
  const int64_t huge = (int64_t{1} << 24) + 1;
  Tensor big = Tensor::zeros(DType::kBool, Shape{huge});
  EXPECT_FALSE(bool_pair_statistics(big.view(), big.view(), big.shape(), {}).has_value());
}

}  // namespace
}  // namespace parity::statistics::detail
