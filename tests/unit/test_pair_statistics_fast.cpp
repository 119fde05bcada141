// The float32 fast path of the pair statistics against the general kernel: every number equal, on
// data shaped like real outputs (smooth, ReLU zeros, duplicates, heavy tails, tiny ranges), with
// both kernel levels (AVX-512 where the CPU has it, and the portable code).
#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "parity/core/tensor.h"
#include "parity/core/thread_pool.h"
#include "../../src/statistics/fast/float_kernels.h"
#include "../../src/statistics/pair_statistics_internal.h"
#include "test_pair_statistics_equal.h"
#include "test_kernel_levels.h"

namespace parity::statistics::detail {
namespace {

// Parity's view of the relative error at non-zero references sums in float64 in another order
// (exact either way when every reference is non-zero).
void check(const Tensor& a, const Tensor& b, const PairStatisticsRequest& request, const std::string& label) {
  SCOPED_TRACE(label);
  expect_general_numbers(float_pair_statistics(a.view(), b.view(), a.shape(), request), a, b, request, false);
}

// kIdentical*: the two outputs hold the same bits (the fast path then measures one of them);
// kAlmostIdentical: the same but for one value in the middle, one ulp apart.
enum class Shape_ { kSmooth, kRelu, kFewValues, kHeavyTail, kTinyRange, kIdentical, kIdenticalRelu,
                    kIdenticalFewValues, kAlmostIdentical };

std::pair<Tensor, Tensor> make_pair(int64_t n, Shape_ kind, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-3, 3);
  Tensor a = Tensor::zeros(DType::kFloat32, Shape{n});
  Tensor b = Tensor::zeros(DType::kFloat32, Shape{n});
  float* x = a.mutable_data<float>();
  float* y = b.mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) {
    float v = 0;
    switch (kind) {
      case Shape_::kSmooth: v = normal(rng) * 3.0f + 1.0f; break;
      case Shape_::kRelu: v = std::max(0.0f, normal(rng)); break;
      case Shape_::kFewValues: v = static_cast<float>(small(rng)) * 0.5f; break;
      case Shape_::kHeavyTail: v = std::exp(normal(rng) * 4.0f) * (i % 3 == 0 ? -1.0f : 1.0f); break;
      case Shape_::kTinyRange: v = 1000.0f + static_cast<float>(small(rng)) * 6.1035156e-05f; break;
      case Shape_::kIdentical: v = normal(rng); break;
      case Shape_::kIdenticalRelu: v = std::max(0.0f, normal(rng)); v = (v == 0.0f && i % 3 == 0) ? -0.0f : v; break;
      case Shape_::kIdenticalFewValues: v = static_cast<float>(small(rng)) * 0.5f; break;
      case Shape_::kAlmostIdentical: v = std::max(0.0f, normal(rng)); break;
    }
    x[i] = v;
    if (kind == Shape_::kIdentical || kind == Shape_::kIdenticalRelu || kind == Shape_::kIdenticalFewValues ||
        kind == Shape_::kAlmostIdentical) {
      y[i] = v;
      continue;
    }
    float noise = normal(rng) * 1e-4f;
    y[i] = (kind == Shape_::kRelu && v == 0.0f) ? (i % 2 ? 0.0f : -0.0f)
           : (kind == Shape_::kFewValues && i % 5 == 0) ? 0.0f
                                                        : v + noise * std::fabs(v);
  }
  if (kind == Shape_::kAlmostIdentical) y[n / 2 + 1] = std::nextafter(x[n / 2 + 1], 1.0f);
  return {std::move(a), std::move(b)};
}

class FastPairStatistics : public kernels::KernelLevelTest {};

TEST_P(FastPairStatistics, MatchesTheGeneralKernel) {
  const Shape_ kinds[] = {Shape_::kSmooth,         Shape_::kRelu,          Shape_::kFewValues,
                          Shape_::kHeavyTail,      Shape_::kTinyRange,     Shape_::kIdentical,
                          Shape_::kIdenticalRelu,  Shape_::kIdenticalFewValues, Shape_::kAlmostIdentical};
  // The smallest pair taken, sizes around the chunk, copy limit and worker boundaries, and one
  // large enough for windows.
  const int64_t sizes[] = {512, 1000, 2048, 2049, 4096, 5003, 65536, 65537, 300001, 1 << 20};
  uint32_t seed = 1;
  for (int64_t n : sizes) {
    for (Shape_ kind : kinds) {
      auto [a, b] = make_pair(n, kind, seed++);
      for (StatisticsStyle style : {StatisticsStyle::kPolygraphy, StatisticsStyle::kParity}) {
        PairStatisticsRequest request;
        request.histograms = true;
        request.histogram_style = style;
        request.error_quantile = 0.75;
        check(a, b, request,
              "n=" + std::to_string(n) + " kind=" + std::to_string(static_cast<int>(kind)) +
                  " style=" + std::to_string(static_cast<int>(style)));
      }
    }
  }
}

TEST_P(FastPairStatistics, SeveralComputeThreads) {
  int before = compute_threads();
  set_compute_threads(4);
  auto [a, b] = make_pair(1 << 20, Shape_::kRelu, 99);
  PairStatisticsRequest request;
  request.histograms = true;
  check(a, b, request, "4 threads");
  set_compute_threads(before);
}

// One output compared with itself, and outputs of nothing but zeros (every reference zero, so
// Parity's relative error at non-zero references has no values).
TEST_P(FastPairStatistics, IdenticalOutputs) {
  auto [a, b] = make_pair(300001, Shape_::kIdenticalRelu, 11);
  PairStatisticsRequest request;
  request.histograms = true;
  request.error_quantile = 0.5;
  check(a, a, request, "the same tensor");
  Tensor zeros = Tensor::zeros(DType::kFloat32, Shape{70000});
  Tensor zeros_too = Tensor::zeros(DType::kFloat32, Shape{70000});
  for (StatisticsStyle style : {StatisticsStyle::kPolygraphy, StatisticsStyle::kParity}) {
    request.histogram_style = style;
    check(zeros, zeros_too, request, "zeros, style " + std::to_string(static_cast<int>(style)));
  }
  // Tolerances below zero fail even equal values, in both kernels.
  request.atol = -1;
  request.rtol = -1;
  check(a, b, request, "negative tolerances");
}

TEST_P(FastPairStatistics, DeclinesWhatItCannotDo) {
  auto [a, b] = make_pair(8192, Shape_::kSmooth, 7);
  a.mutable_data<float>()[100] = NAN;
  EXPECT_FALSE(float_pair_statistics(a.view(), b.view(), a.shape(), {}).has_value());
  auto [c, d] = make_pair(8192, Shape_::kSmooth, 8);
  d.mutable_data<float>()[5] = INFINITY;
  EXPECT_FALSE(float_pair_statistics(c.view(), d.view(), c.shape(), {}).has_value());
  // NaN compared with itself: the same bits, but x - x is NaN, not zero.
  auto [e, f] = make_pair(8192, Shape_::kIdentical, 9);
  e.mutable_data<float>()[4000] = NAN;
  f.mutable_data<float>()[4000] = NAN;
  EXPECT_FALSE(float_pair_statistics(e.view(), f.view(), e.shape(), {}).has_value());
  // float32 sums that overflow: the general kernel's float64 moments take over.
  Tensor big = Tensor::zeros(DType::kFloat32, Shape{8192});
  for (int64_t i = 0; i < 8192; ++i) big.mutable_data<float>()[i] = 3e38f;
  EXPECT_FALSE(float_pair_statistics(big.view(), big.view(), big.shape(), {}).has_value());
  // ...and compute_pair_statistics still answers, through the general kernel.
  PairStatistics general = compute_pair_statistics(big.view(), big.view(), big.shape(), {});
  EXPECT_EQ(general.out0.polygraphy.max, static_cast<double>(3e38f));
}

INSTANTIATE_TEST_SUITE_P(Levels, FastPairStatistics, kernels::both_levels(), kernels::level_name);

}  // namespace
}  // namespace parity::statistics::detail
