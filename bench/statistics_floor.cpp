// A floor for the cost of Polygraphy's exact statistics on this CPU: the building blocks of one
// `simple` comparison of two float32 tensors, each written as lean as it can be (AVX-512, one
// thread, no bookkeeping, nothing kept), over the same pairs. Parity's real kernels
// (src/statistics/fast/float_kernels.cpp) do at least this work per element pair, and more: numpy's
// pairwise float32 sums, first indices of the extremes, the verdict, the NaN checks.
//
//   build/release/bench/parity_bench_statistics_floor [Google Benchmark flags]
//
// Every block computes both errors (d = |x - y|, r = d / |y|) and then works on the four streams
// x, y, d, r:
//   - moments: sum, sum of squares, min and max of each stream (the statistics' first pass);
//   - display_histograms: the 10-bin histogram of each stream (Polygraphy's histogram lines);
//   - windows/W: W windows per stream around sampled quantiles (median, p90, p95, p99), each
//     counting the values below it and compressing the values inside it (the order statistics'
//     second pass, as the sampled-window fast path does it);
//   - radix_histograms: a 65,536-bin histogram of each stream's top 16 key bits (the exact
//     alternative to windows: one histogram pass, then a pass over the candidates).
// Read items_per_second as element pairs per second on one core. The target of a third
// of the memory bandwidth is about 1 G pairs/s on the whole machine (bench/compare_vs_polygraphy.py
// prints the bandwidth), so about 0.5 G pairs/s per core on two cores.
#include <benchmark/benchmark.h>

// GCC 12's own AVX-512 headers trip -W(maybe-)uninitialized (their _mm512_undefined_ps) once the
// intrinsics are inlined; nothing of this file's is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

#define FLOOR_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

constexpr int64_t kPairs = int64_t{1} << 24;  // 16 M pairs: 128 MB of input

struct Pairs {
  std::vector<float> x, y;
  // Per stream (x, y, d, r): window ends around the sampled median, p90, p95, p99, each holding
  // about 1% of the values.
  std::array<std::array<std::pair<float, float>, 4>, 4> windows;
};

float relative(float d, float y) { return d / std::fabs(y); }

const Pairs& pairs() {
  static const Pairs made = [] {
    Pairs p;
    p.x.resize(kPairs);
    p.y.resize(kPairs);
    std::mt19937 generator(0);
    std::normal_distribution<float> value(0.0f, 1.0f);
    std::uniform_real_distribution<float> noise(-1e-6f, 1e-6f);
    for (int64_t i = 0; i < kPairs; ++i) {
      p.x[i] = value(generator);
      p.y[i] = p.x[i] + noise(generator);
    }
    constexpr int64_t kSample = 65536;
    std::array<std::vector<float>, 4> sample;
    for (int64_t i = 0; i < kPairs; i += kPairs / kSample) {
      float d = std::fabs(p.x[i] - p.y[i]);
      sample[0].push_back(p.x[i]);
      sample[1].push_back(p.y[i]);
      sample[2].push_back(d);
      sample[3].push_back(relative(d, p.y[i]));
    }
    const double levels[4] = {0.5, 0.9, 0.95, 0.99};
    for (int k = 0; k < 4; ++k) {
      std::sort(sample[k].begin(), sample[k].end());
      for (int w = 0; w < 4; ++w) {
        auto at = static_cast<int64_t>(levels[w] * (kSample - 1));
        auto low = std::max<int64_t>(at - kSample / 200, 0), high = std::min<int64_t>(at + kSample / 200, kSample - 1);
        p.windows[k][w] = {sample[k][low], sample[k][high]};
      }
    }
    return p;
  }();
  return made;
}

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// The four streams of 16 pairs.
struct Streams {
  __m512 v[4];
};
FLOOR_AVX512 inline Streams streams_at(const float* x, const float* y, int64_t i) {
  const __m512 magnitude = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(y + i);
  __m512 d = _mm512_and_ps(_mm512_sub_ps(a, b), magnitude);
  return {{a, b, d, _mm512_div_ps(d, _mm512_and_ps(b, magnitude))}};
}

FLOOR_AVX512 float moments(const float* x, const float* y, int64_t n) {
  __m512 sum[4], squares[4], low[4], high[4];
  for (int k = 0; k < 4; ++k) {
    sum[k] = squares[k] = _mm512_setzero_ps();
    low[k] = _mm512_set1_ps(INFINITY);
    high[k] = _mm512_set1_ps(-INFINITY);
  }
  for (int64_t i = 0; i < n; i += 16) {
    Streams s = streams_at(x, y, i);
    for (int k = 0; k < 4; ++k) {
      sum[k] = _mm512_add_ps(sum[k], s.v[k]);
      squares[k] = _mm512_fmadd_ps(s.v[k], s.v[k], squares[k]);
      low[k] = _mm512_min_ps(low[k], s.v[k]);
      high[k] = _mm512_max_ps(high[k], s.v[k]);
    }
  }
  float total = 0;
  for (int k = 0; k < 4; ++k)
    total += _mm512_reduce_add_ps(sum[k]) + _mm512_reduce_add_ps(squares[k]) + _mm512_reduce_min_ps(low[k]) +
             _mm512_reduce_max_ps(high[k]);
  return total;
}

FLOOR_AVX512 int64_t display_histograms(const float* x, const float* y, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1);
  __m512i counts[4][10];
  for (auto& stream : counts)
    for (auto& c : stream) c = _mm512_setzero_si512();
  const float first[4] = {-5.0f, -5.0f, 0.0f, 0.0f}, scale[4] = {1.0f, 1.0f, 5e6f, 5e6f};
  for (int64_t i = 0; i < n; i += 16) {
    Streams s = streams_at(x, y, i);
    for (int k = 0; k < 4; ++k) {
      __m512 position = _mm512_mul_ps(_mm512_sub_ps(s.v[k], _mm512_set1_ps(first[k])), _mm512_set1_ps(scale[k]));
      __m512i bin = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(position, _mm512_setzero_ps()), _mm512_set1_ps(9)));
      for (int b = 0; b < 10; ++b)
        counts[k][b] = _mm512_mask_add_epi32(counts[k][b], _mm512_cmpeq_epi32_mask(bin, _mm512_set1_epi32(b)),
                                             counts[k][b], one);
    }
  }
  int64_t total = 0;
  for (auto& stream : counts)
    for (auto& c : stream) total += _mm512_reduce_add_epi32(c);
  return total;
}

FLOOR_AVX512 int64_t windows(const float* x, const float* y, int64_t n, const Pairs& p, int per_stream,
                             std::vector<float>& inside) {
  constexpr int64_t kRing = 1 << 16;  // inside values land in a ring: the stores happen, nothing is kept
  const __m512i one = _mm512_set1_epi32(1);
  __m512 low[4][4], high[4][4];
  __m512i below[4][4];
  int64_t taken[4][4] = {};
  for (int k = 0; k < 4; ++k)
    for (int w = 0; w < 4; ++w) {
      low[k][w] = _mm512_set1_ps(p.windows[k][w].first);
      high[k][w] = _mm512_set1_ps(p.windows[k][w].second);
      below[k][w] = _mm512_setzero_si512();
    }
  for (int64_t i = 0; i < n; i += 16) {
    Streams s = streams_at(x, y, i);
    for (int k = 0; k < 4; ++k)
      for (int w = 0; w < per_stream; ++w) {
        __mmask16 under = _mm512_cmp_ps_mask(s.v[k], low[k][w], _CMP_LT_OQ);
        below[k][w] = _mm512_mask_add_epi32(below[k][w], under, below[k][w], one);
        __mmask16 in = _mm512_mask_cmp_ps_mask(static_cast<__mmask16>(~under), s.v[k], high[k][w], _CMP_LE_OQ);
        float* ring = inside.data() + (k * 4 + w) * (kRing + 16);
        _mm512_storeu_ps(ring + (taken[k][w] & (kRing - 1)), _mm512_maskz_compress_ps(in, s.v[k]));
        taken[k][w] += std::popcount(static_cast<unsigned>(in));
      }
  }
  int64_t total = 0;
  for (int k = 0; k < 4; ++k)
    for (int w = 0; w < 4; ++w) total += taken[k][w] + _mm512_reduce_add_epi32(below[k][w]);
  return total;
}

inline uint32_t radix_key(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

int64_t radix_histograms(const float* x, const float* y, int64_t n, std::vector<uint32_t>& bins) {
  std::fill(bins.begin(), bins.end(), 0u);
  for (int64_t i = 0; i < n; ++i) {
    float d = std::fabs(x[i] - y[i]);
    ++bins[radix_key(x[i]) >> 16];
    ++bins[65536 + (radix_key(y[i]) >> 16)];
    ++bins[2 * 65536 + (radix_key(d) >> 16)];
    ++bins[3 * 65536 + (radix_key(relative(d, y[i])) >> 16)];
  }
  return bins[12345];
}

template <typename Work>
void run(benchmark::State& state, Work work) {
  if (!has_avx512()) {
    state.SkipWithError("this CPU has no AVX-512: the floor is measured with AVX-512 kernels only");
    return;
  }
  const Pairs& p = pairs();
  for (auto _ : state) benchmark::DoNotOptimize(work(p.x.data(), p.y.data(), kPairs));
  state.SetItemsProcessed(state.iterations() * kPairs);
}

void bm_moments(benchmark::State& state) { run(state, moments); }
void bm_display_histograms(benchmark::State& state) { run(state, display_histograms); }
void bm_windows(benchmark::State& state) {
  std::vector<float> inside(16 * ((1 << 16) + 16));
  int per_stream = static_cast<int>(state.range(0));
  run(state, [&](const float* x, const float* y, int64_t n) { return windows(x, y, n, pairs(), per_stream, inside); });
}
void bm_radix_histograms(benchmark::State& state) {
  std::vector<uint32_t> bins(4 * 65536);
  run(state, [&](const float* x, const float* y, int64_t n) { return radix_histograms(x, y, n, bins); });
}

BENCHMARK(bm_moments)->Name("moments")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_display_histograms)->Name("display_histograms")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_windows)->Name("windows")->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_radix_histograms)->Name("radix_histograms")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
