// OpenVINO's own per-call cost on a tiny model: the floor under any binding's overhead, for
// bench/openvino_overhead.py (the counterpart of measure_onnxrt_run_floor for ONNX Runtime).
//   parity_bench_openvino_infer_floor MODEL [--calls N] [--batches N] [--threads N] [--precision f32]
//                                     [--hint LATENCY]
// Compiles MODEL (one float32 input of shape [1]) with OpenVINO's C++ API and the same properties
// the runner sets, binds the input tensor once and times bare ov::InferRequest::infer() calls,
// reading one output value per call. Prints one JSON line: floor_us, the median over --batches of
// the mean call time in microseconds. Unlike the other bench binaries it links OpenVINO itself
// (only where CMake found it), as Parity's runner does not.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <openvino/openvino.hpp>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OpenVINO bare infer() time"};
  std::string model_path, precision = "f32", hint = "LATENCY";
  int calls = 2000, batches = 15, threads = 1;
  app.add_option("model", model_path)->required();
  app.add_option("--calls", calls, "infer() calls per batch");
  app.add_option("--batches", batches, "batches (the median batch mean is reported)");
  app.add_option("--threads", threads, "ov::inference_num_threads");
  app.add_option("--precision", precision, "ov::hint::inference_precision (f32, bf16, f16)");
  app.add_option("--hint", hint, "ov::hint::performance_mode (LATENCY, THROUGHPUT)");
  CLI11_PARSE(app, argc, argv);
  try {
    ov::Core core;
    ov::CompiledModel compiled =
        core.compile_model(model_path, "CPU", ov::hint::inference_precision(ov::element::Type(precision)),
                           ov::inference_num_threads(threads),
                           ov::hint::performance_mode(hint == "THROUGHPUT" ? ov::hint::PerformanceMode::THROUGHPUT
                                                                           : ov::hint::PerformanceMode::LATENCY));
    ov::InferRequest request = compiled.create_infer_request();
    float input = 1.5f;
    request.set_input_tensor(ov::Tensor(ov::element::f32, ov::Shape{1}, &input));
    volatile float sink = 0;
    for (int i = 0; i < calls; ++i) {  // warm-up
      request.infer();
      sink = sink + request.get_output_tensor().data<float>()[0];
    }
    std::vector<double> means;
    for (int b = 0; b < batches; ++b) {
      auto begin = Clock::now();
      for (int i = 0; i < calls; ++i) {
        request.infer();
        sink = sink + request.get_output_tensor().data<float>()[0];
      }
      means.push_back(std::chrono::duration<double, std::micro>(Clock::now() - begin).count() / calls);
    }
    std::printf("{\"floor_us\": %.3f}\n", median(means));
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "[E] %s: %s\n", model_path.c_str(), error.what());
    return 1;
  }
}
