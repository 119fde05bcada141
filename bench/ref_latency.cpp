// Times Parity's reference runner on a model: parity_bench_ref_latency MODEL INPUTS.npz
//   [--threads N] [--iterations N] [--warmup N] [--stream] [--fp64] [--save-outputs OUT.npz]
// Prints one JSON line: median and mean latency (ms) and peak RSS (MB) of this process.
// --stream compares the memory of a layerwise run: every intermediate tensor is handed to a
// callback (which reads it) and freed, as `parity run --onnx-outputs mark all` will do.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/thread_pool.h"
#include "parity/runtime/ref/ref_runner.h"

int main(int argc, char** argv) {
  using namespace parity;
  CLI::App app{"Reference runner latency and memory"};
  std::string model_path, inputs_path, save_outputs;
  int threads = 1, iterations = 10, warmup = 2;
  bool stream = false, fp64 = false;
  app.add_option("model", model_path)->required();
  app.add_option("inputs", inputs_path, ".npz with one array per model input")->required();
  app.add_option("--threads", threads);
  app.add_option("--iterations", iterations);
  app.add_option("--warmup", warmup);
  app.add_flag("--stream", stream);
  app.add_flag("--fp64", fp64);
  app.add_option("--save-outputs", save_outputs);
  CLI11_PARSE(app, argc, argv);
  try {
    if (threads > 0) set_compute_threads(threads);
    runtime::RefOptions options;
    options.fp64 = fp64;
    runtime::RefRunner runner(runtime::ModelFromPath(model_path), options);
    runtime::ActiveRunner active(runner);
    NamedTensors feed = load_npz(inputs_path);
    double checksum = 0;
    int64_t streamed = 0;
    if (stream) {
      runner.set_intermediate_outputs(runtime::IntermediateOutputs::all());
      runner.set_tensor_callback([&](const runtime::ProducedTensor& t) {
        ++streamed;
        if (t.tensor.dtype() == DType::kFloat32 && t.tensor.size() > 0) checksum += t.tensor.data<float>()[0];
      });
    }
    NamedTensors outputs;
    for (int i = 0; i < warmup; ++i) outputs = runner.infer(feed);
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
      outputs = runner.infer(feed);
      times.push_back(runner.last_inference_time() * 1e3);
    }
    if (!save_outputs.empty()) save_npz(save_outputs, outputs);
    std::sort(times.begin(), times.end());
    double mean = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    fmt::print(
        "{{\"median_ms\": {:.3f}, \"mean_ms\": {:.3f}, \"peak_rss_mb\": {:.1f}, \"streamed\": {}, \"outputs\": {}}}\n",
        times[times.size() / 2], mean, usage.ru_maxrss / 1024.0, streamed / std::max(1, warmup + iterations),
        outputs.size());
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
