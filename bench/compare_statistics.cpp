// The per-pair cost of comparisons: CompareFunc.simple's per-output comparison (statistics of both
// outputs and both errors, verdict, log lines) and summarize() of one tensor, at sizes from a
// layerwise run's small activations (1e2 elements) to a large output (64e6), so both the fixed
// cost per call and the per-element rate show.
//
//   build/release/bench/parity_bench_compare_statistics [--threads N] [Google Benchmark flags]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "parity/compare/compare_func.h"
#include "parity/statistics/statistics.h"
#include "parity/core/logger.h"
#include "parity/core/tensor.h"
#include "parity/core/thread_pool.h"

namespace {

using namespace parity;

// Two float32 tensors that agree within the default tolerances (a passing layer, as most are).
struct Pair {
  Tensor reference, output;
};

const Pair& pair_of(int64_t size) {
  static std::vector<std::pair<int64_t, Pair>> cache;
  for (const auto& [cached_size, pair] : cache)
    if (cached_size == size) return pair;
  Pair pair{Tensor::zeros(DType::kFloat32, {size}), Tensor::zeros(DType::kFloat32, {size})};
  std::mt19937 generator(0);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::uniform_real_distribution<float> noise(-1e-6f, 1e-6f);
  float* reference = pair.reference.mutable_data<float>();
  float* output = pair.output.mutable_data<float>();
  for (int64_t i = 0; i < size; ++i) {
    reference[i] = value(generator);
    output[i] = reference[i] + noise(generator);
  }
  cache.emplace_back(size, std::move(pair));
  return cache.back().second;
}

void simple_comparison(benchmark::State& state) {
  const Pair& pair = pair_of(state.range(0));
  compare::SimpleOutputParams params;
  for (auto _ : state) {
    compare::OutputComparison result = compare::compare_simple_output(
        "runner0", "output", pair.output.view(), "runner1", "output", pair.reference.view(), params);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 2 * static_cast<int64_t>(sizeof(float)));
}

// The same comparison of two outputs with the same bits in separate buffers (two runs of one
// backend, or an exact layer): the fast path measures one of them.
void identical_comparison(benchmark::State& state) {
  const Pair& pair = pair_of(state.range(0));
  Tensor copy = Tensor::zeros(DType::kFloat32, {state.range(0)});
  std::memcpy(copy.mutable_data<float>(), pair.reference.data<float>(),
              static_cast<std::size_t>(state.range(0)) * sizeof(float));
  compare::SimpleOutputParams params;
  for (auto _ : state) {
    compare::OutputComparison result = compare::compare_simple_output(
        "runner0", "output", copy.view(), "runner1", "output", pair.reference.view(), params);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 2 * static_cast<int64_t>(sizeof(float)));
}

// Two bool outputs (a mask, a selection) that differ in about 1% of the values: only the
// general kernel takes them.
void bool_comparison(benchmark::State& state) {
  const int64_t size = state.range(0);
  Tensor reference = Tensor::zeros(DType::kBool, {size}), output = Tensor::zeros(DType::kBool, {size});
  std::mt19937 generator(0);
  std::bernoulli_distribution set(0.3), flip(0.01);
  auto* r = reference.mutable_data<uint8_t>();
  auto* o = output.mutable_data<uint8_t>();
  for (int64_t i = 0; i < size; ++i) {
    r[i] = set(generator) ? 1 : 0;
    o[i] = flip(generator) ? static_cast<uint8_t>(1 - r[i]) : r[i];
  }
  compare::SimpleOutputParams params;
  for (auto _ : state) {
    compare::OutputComparison result = compare::compare_simple_output("runner0", "output", output.view(), "runner1",
                                                                      "output", reference.view(), params);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * size);
  state.SetBytesProcessed(state.iterations() * size * 2);
}

void summarize(benchmark::State& state) {
  const Pair& pair = pair_of(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(statistics::summarize(pair.reference.view()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * state.range(0) * static_cast<int64_t>(sizeof(float)));
}

// Wall-clock time: the work runs on the compute thread pool, not only on the calling thread.
BENCHMARK(simple_comparison)
    ->Arg(100)
    ->Arg(10'000)
    ->Arg(150'000)
    ->Arg(1'000'000)
    ->Arg(64'000'000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(identical_comparison)
    ->Arg(150'000)
    ->Arg(1'000'000)
    ->Arg(16'000'000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(bool_comparison)->Arg(1'000)->Arg(526'000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(summarize)
    ->Arg(100)
    ->Arg(10'000)
    ->Arg(150'000)
    ->Arg(1'000'000)
    ->Arg(64'000'000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  // --threads N (before Google Benchmark's own flags): parity::set_compute_threads.
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") != 0) continue;
    set_compute_threads(std::atoi(argv[i + 1]));
    for (int j = i; j + 2 < argc; ++j) argv[j] = argv[j + 2];
    argc -= 2;
    break;
  }
  // The comparison logs as in a run (INFO), to /dev/null.
  std::FILE* null_stream = std::fopen("/dev/null", "w");
  if (null_stream) Logger::global().set_stream(null_stream);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
