// parity_run_backend: runs one of Parity's runners on inputs from an .npz and writes the outputs
// to an .npz, so pytest can compare Parity with its peers (the onnxruntime Python package) and
// its runners with each other. A test tool, not the `parity run` command.
//
//   parity_run_backend MODEL (--ref | --onnxrt | --openvino) --inputs in.npz --outputs out.npz
//       [--ort-opt-level disable|basic|extended|all] [--threads N] [--providers P...]
//       [--ort-library PATH] [--ort-profile PREFIX] [--ov-precision f32|bf16|f16]
//       [--ov-perf-hint latency|throughput] (--threads also sets OpenVINO's inference threads)
//       [--mark-all | --mark NAME... | --mark-fused] [--stream] [--budget BYTES] [--iterations N] [--discard] [-v]
//
// --stream collects every tensor through the runner's streaming callback (written alongside the
// outputs as "stream:<name>"). --discard writes nothing and keeps nothing: it prints how many
// tensors (and bytes) came out and a hash of their bytes, for memory measurements
// (bench/ort_layerwise_memory.py). Exit code 0 on success, 1 on a Parity error (one "[E]" line),
// 2 on bad arguments.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <unordered_set>

#include <CLI/CLI.hpp>

#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_runner.h"
#include "parity/runtime/ref/ref_runner.h"

using namespace parity;
using namespace parity::runtime;

int main(int argc, char** argv) {
  CLI::App app{"Runs a Parity runner on .npz inputs and saves its outputs as .npz"};
  std::string model_path, inputs_path, outputs_path;
  bool use_ref = false, use_onnxrt = false, use_openvino = false, mark_all = false, stream = false;
  int verbosity = 0;
  int iterations = 1;
  std::vector<std::string> marked;
  OnnxrtOptions ort;
  std::string opt_level = "all";
  app.add_option("model", model_path, "ONNX model (or, with --openvino, a compiled model file)")->required();
  auto* ref_flag = app.add_flag("--ref", use_ref, "Parity's reference runner");
  auto* ort_flag = app.add_flag("--onnxrt", use_onnxrt, "ONNX Runtime through its C API");
  auto* openvino_flag = app.add_flag("--openvino", use_openvino, "OpenVINO through the backend module");
  ref_flag->excludes(ort_flag);
  openvino_flag->excludes(ref_flag)->excludes(ort_flag);
  OpenvinoOptions openvino;
  std::string ov_precision, ov_perf_hint;
  app.add_option("--ov-precision", ov_precision, "OpenVINO inference precision (default: OpenVINO's)");
  app.add_option("--ov-perf-hint", ov_perf_hint, "OpenVINO performance hint");
  app.add_option("--inputs", inputs_path, "inputs (.npz)")->required();
  bool discard = false;
  auto* outputs_option = app.add_option("--outputs", outputs_path, "where to write outputs (.npz)");
  app.add_flag("--discard", discard, "write and keep nothing; print counts, bytes and a hash")
      ->excludes(outputs_option);
  app.add_option("--ort-opt-level", opt_level, "ONNX Runtime graph optimization level");
  app.add_option("--threads", ort.intra_op_threads,
                 "ONNX Runtime intra-op threads (0: its default)");
  app.add_option("--providers", ort.providers, "ONNX Runtime execution providers");
  app.add_option("--ort-library", ort.library_path, "ONNX Runtime shared library (file or folder)");
  app.add_option("--ort-profile", ort.profile_prefix, "ONNX Runtime profile file prefix");
  app.add_option("--budget", ort.intermediate_memory_budget,
                 "layerwise memory budget in bytes (0: auto)");
  auto* all_flag = app.add_flag("--mark-all", mark_all, "return every intermediate tensor");
  app.add_option("--mark", marked, "return these intermediate tensors")->excludes(all_flag);
  bool mark_fused = false;
  app.add_flag("--mark-fused", mark_fused,
               "--openvino: return the tensors the compiled plain model's layers write out (--ov-outputs mark fused)")
      ->excludes(all_flag);
  app.add_flag("--stream", stream, "collect every tensor through the streaming callback");
  app.add_option("--iterations", iterations, "run this many times (outputs of the last)");
  app.add_flag("-v", verbosity, "verbose (repeat for more)");
  CLI11_PARSE(app, argc, argv);
  if (verbosity > 0)
    Logger::global().set_severity(verbosity > 2   ? Severity::kSuperVerbose
                                  : verbosity > 1 ? Severity::kExtraVerbose
                                                  : Severity::kVerbose);

  // Sum over tensors of FNV-1a(name, bytes): the same set of tensors gives the same hash in any
  // order.
  std::uint64_t hash = 0;
  auto mix_tensor = [&hash](const std::string& name, const Tensor& tensor) {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const void* data, std::size_t size) {
      for (std::size_t i = 0; i < size; ++i)
        h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
    };
    mix(name.data(), name.size());
    if (tensor.dtype() != DType::kString) mix(tensor.raw(), tensor.byte_size());
    hash += h;
  };
  std::size_t streamed_count = 0, streamed_bytes = 0;

  try {
    if (int(use_ref) + int(use_onnxrt) + int(use_openvino) != 1)
      raise<InvalidInputError>("choose one runner: --ref, --onnxrt or --openvino");
    if (!discard && outputs_path.empty())
      raise<InvalidInputError>("give --outputs PATH or --discard");
    ort.optimization_level = ort_optimization_level_from_name(opt_level);
    std::unique_ptr<Runner> runner;
    if (!ov_precision.empty()) openvino.precision = ov_precision;
    if (!ov_perf_hint.empty()) openvino.performance_hint = ov_perf_hint;
    if (ort.intra_op_threads > 0) openvino.threads = ort.intra_op_threads;
    openvino.fused_outputs = mark_fused;
    // A compiled model file (`parity convert --openvino -o m.ovc`) is imported instead of compiled.
    if (use_openvino && is_openvino_compiled_file(model_path)) openvino.compiled_file = model_path;
    if (use_ref)
      runner = std::make_unique<RefRunner>(ModelFromPath(model_path));
    else if (use_openvino)
      runner = std::make_unique<OpenvinoRunner>(ModelFromPath(model_path), openvino);
    else
      runner = std::make_unique<OnnxrtRunner>(ModelFromPath(model_path), ort);
    if (mark_all) runner->set_intermediate_outputs(IntermediateOutputs::all());
    if (!marked.empty()) runner->set_intermediate_outputs(IntermediateOutputs::list(marked));
    NamedTensors streamed;
    if (stream)
      runner->set_tensor_callback([&](const ProducedTensor& produced) {
        if (discard) {
          ++streamed_count;
          streamed_bytes += produced.tensor.byte_size();
          mix_tensor(produced.name, produced.tensor);
        } else {
          streamed.emplace_back(produced.name, Tensor::copy_of(produced.tensor));
        }
      });

    NamedTensors feed = load_npz(inputs_path);
    NamedTensors outputs;
    {
      ActiveRunner active(*runner);
      for (int i = 0; i < iterations; ++i) {
        streamed.clear();
        streamed_count = streamed_bytes = 0;
        hash = 0;
        outputs = active->infer(feed);
      }
      log::info("{} | inference time: {:.3f} ms", runner->name(),
                runner->last_inference_time() * 1e3);
    }
    if (discard) {
      std::size_t bytes = 0;
      for (const auto& [name, tensor] : outputs) {
        bytes += tensor.byte_size();
        if (!stream) mix_tensor(name, tensor);
      }
      std::printf(
          "outputs=%zu output_bytes=%zu streamed=%zu streamed_bytes=%zu runs=%zu hash=%016llx\n",
          outputs.size(), bytes, streamed_count, streamed_bytes,
          use_onnxrt ? static_cast<OnnxrtRunner&>(*runner).last_run_count() : std::size_t{1},
          static_cast<unsigned long long>(hash));
      return 0;
    }
    // Streamed tensors go in under "stream:<name>".
    if (stream)
      for (auto& [name, tensor] : streamed)
        outputs.emplace_back("stream:" + name, std::move(tensor));
    save_npz(outputs_path, outputs);
    return 0;
  } catch (const Error& error) {
    std::fprintf(stderr, "[E] %s\n", error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "[E] internal error: %s\n", error.what());
    return 1;
  }
}
