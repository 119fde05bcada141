// Parity's OpenVINO runner: per-infer() overhead and compile time on a tiny model.
//   parity_bench_openvino_overhead MODEL [--calls N] [--batches N] [--compiles N] [--threads N]
//                                  [--precision f32] [--hint latency]
// The model must take one float32 input of shape [1] (bench/openvino_overhead.py writes an
// Identity and an Add model). OpenVINO and the backend module are found as `--openvino` finds them
// (parity/runtime/openvino/openvino_runner.h; the driver sets PARITY_OPENVINO_MODULE). Prints one JSON line
// (times in microseconds):
//   library_load_us   finding and dlopen-ing OpenVINO and the backend module (once)
//   first_compile_us  the first activation after that (ONNX read + compile_model)
//   compile_us        median activation over --compiles
//   infer_us          median over --batches of the mean time of --calls Runner::infer() calls
//                     (feed checks, input tensors, InferRequest::infer, output wrapping)
// bench/openvino_overhead.py runs it next to OpenVINO's Python API and prints ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/openvino/openvino_runner.h"

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
  CLI::App app{"OpenVINO runner overhead"};
  std::string model_path, precision = "f32", hint = "latency";
  int calls = 2000, batches = 15, compiles = 15, threads = 1;
  app.add_option("model", model_path)->required();
  app.add_option("--calls", calls, "infer() calls per batch");
  app.add_option("--batches", batches, "batches (the median batch mean is reported)");
  app.add_option("--compiles", compiles, "activations timed after the first");
  app.add_option("--threads", threads, "ov::inference_num_threads (0: OpenVINO's default)");
  app.add_option("--precision", precision, "ov::hint::inference_precision (f32, bf16, f16)");
  app.add_option("--hint", hint, "ov::hint::performance_mode (latency, throughput)");
  CLI11_PARSE(app, argc, argv);
  Logger::global().set_severity(Severity::kWarning);
  try {
    OpenvinoOptions options;
    options.precision = precision;
    options.threads = threads;
    options.performance_hint = hint;

    auto start = Clock::now();
    OpenvinoBackendHandle handle = load_openvino_backend();
    double library_load_us = microseconds_since(start);

    auto activate_once = [&] {
      OpenvinoRunner runner(ModelFromPath(model_path), options);
      auto begin = Clock::now();
      runner.activate();
      double us = microseconds_since(begin);
      runner.deactivate();
      return us;
    };
    double first_compile_us = activate_once();
    std::vector<double> compile_times;
    for (int i = 0; i < compiles; ++i) compile_times.push_back(activate_once());

    OpenvinoRunner runner(ModelFromPath(model_path), options);
    ActiveRunner active(runner);
    std::string input_name = active->input_metadata()[0].first;
    Tensor x = Tensor::zeros(DType::kFloat32, {1});
    x.mutable_data<float>()[0] = 1.5f;
    NamedTensors feed{{input_name, x}};
    volatile float sink = 0;
    for (int i = 0; i < calls; ++i)
      sink = sink + active->infer(feed)[0].second.data<float>()[0];  // warm-up
    std::vector<double> infer_means;
    for (int b = 0; b < batches; ++b) {
      auto begin = Clock::now();
      for (int i = 0; i < calls; ++i) sink = sink + active->infer(feed)[0].second.data<float>()[0];
      infer_means.push_back(microseconds_since(begin) / calls);
    }
    std::printf("%s\n",
                fmt::format("{{\"openvino_version\": \"{}\", \"library_dir\": \"{}\", \"module\": \"{}\", "
                            "\"inference_precision\": \"{}\", \"library_load_us\": {:.1f}, "
                            "\"first_compile_us\": {:.1f}, \"compile_us\": {:.1f}, \"infer_us\": {:.3f}}}",
                            handle.info.version, handle.info.library_dir, handle.info.module_path,
                            runner.inference_precision(), library_load_us, first_compile_us, median(compile_times),
                            median(infer_means))
                    .c_str());
    return 0;
  } catch (const Error& error) {
    std::fprintf(stderr, "[E] %s\n", error.what());
    return 1;
  }
}
