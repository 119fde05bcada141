// Parity's ONNX Runtime runner: per-infer() overhead and session-creation time on a tiny model.
//   parity_bench_onnxrt_overhead MODEL [--calls N] [--batches N] [--sessions N] [--threads N]
// The model must take one float32 input of shape [1] (bench/onnxrt_overhead.py writes an Identity
// and an Add model). Prints one JSON line (times in microseconds):
//   library_load_us   finding and dlopen-ing ONNX Runtime and creating its environment (once)
//   first_session_us  the first activation after that (model load + session creation)
//   session_us        median activation (model load + session creation) over --sessions
//   infer_us          median over --batches of the mean time of --calls Runner::infer() calls
//                     (feed validation, OrtValue wrapping, OrtApi::Run, output wrapping)
//   session_run_us    the same through OnnxrtSession::run (no runner, no feed validation)
//   floor_us          the same for a bare OrtApi::Run (values made once, outputs unread): ONNX
//                     Runtime's own cost, under any binding's overhead
// bench/onnxrt_overhead.py runs it next to onnxruntime's Python InferenceSession and prints ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace {

using Clock = std::chrono::steady_clock;

double microseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parity;
  using namespace parity::runtime;
  CLI::App app{"ONNX Runtime runner overhead"};
  std::string model_path;
  int calls = 2000, batches = 15, sessions = 15, threads = 1;
  app.add_option("model", model_path)->required();
  app.add_option("--calls", calls, "infer() calls per batch");
  app.add_option("--batches", batches, "batches (the median batch mean is reported)");
  app.add_option("--sessions", sessions, "activations timed after the first");
  app.add_option("--threads", threads, "intra-op threads (0: ONNX Runtime's default)");
  CLI11_PARSE(app, argc, argv);
  Logger::global().set_severity(Severity::kWarning);
  try {
    OnnxrtOptions options;
    options.intra_op_threads = threads;

    auto start = Clock::now();
    OnnxrtLibraryInfo library = load_onnxrt_library(options.library_path);
    double library_load_us = microseconds_since(start);

    auto activate_once = [&] {
      OnnxrtRunner runner(ModelFromPath(model_path), options);
      auto begin = Clock::now();
      runner.activate();
      double us = microseconds_since(begin);
      runner.deactivate();
      return us;
    };
    double first_session_us = activate_once();
    std::vector<double> session_times;
    for (int i = 0; i < sessions; ++i) session_times.push_back(activate_once());

    OnnxrtRunner runner(ModelFromPath(model_path), options);
    ActiveRunner active(runner);
    std::string input_name = active->input_metadata()[0].first;
    Tensor x = Tensor::zeros(DType::kFloat32, {1});
    x.mutable_data<float>()[0] = 1.5f;
    NamedTensors feed{{input_name, x}};
    volatile float sink = 0;
    for (int i = 0; i < calls; ++i)
      sink = sink + active->infer(feed)[0].second.data<float>()[0];  // warm-up
    std::vector<double> infer_means, run_means, floor_means;
    auto session = session_from_model(model_from_path(model_path), options);
    for (int i = 0; i < calls; ++i) sink = sink + session->run(feed)[0].second.data<float>()[0];
    for (int b = 0; b < batches; ++b) {
      auto begin = Clock::now();
      for (int i = 0; i < calls; ++i) sink = sink + active->infer(feed)[0].second.data<float>()[0];
      infer_means.push_back(microseconds_since(begin) / calls);
      begin = Clock::now();
      for (int i = 0; i < calls; ++i) sink = sink + session->run(feed)[0].second.data<float>()[0];
      run_means.push_back(microseconds_since(begin) / calls);
      floor_means.push_back(measure_onnxrt_run_floor(*session, feed, calls) * 1e6);
    }
    std::printf(
        "%s\n",
        fmt::format("{{\"ort_version\": \"{}\", \"library\": \"{}\", \"library_load_us\": {:.1f}, "
                    "\"first_session_us\": {:.1f}, \"session_us\": {:.1f}, \"infer_us\": {:.3f}, "
                    "\"session_run_us\": {:.3f}, \"floor_us\": {:.3f}}}",
                    library.version, library.path, library_load_us, first_session_us,
                    median(session_times), median(infer_means), median(run_means),
                    median(floor_means))
            .c_str());
    return 0;
  } catch (const Error& error) {
    std::fprintf(stderr, "[E] %s\n", error.what());
    return 1;
  }
}
