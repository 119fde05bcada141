#include "args/openvino_args.h"

#include <fmt/format.h>

#include "args/generated_script.h"
#include "args/output_marks.h"
#include "args/tensor_meta_parse.h"
#include "parity/core/error.h"
#include "parity/core/thread_pool.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::cli {

void OpenvinoArgs::add_to(CLI::App& app) {
  const char* group = "OpenVINO Compilation";
  app.add_option("--ov-precision", precision_,
                 "Inference precision (ov::hint::inference_precision): f32, bf16 or f16; one OpenVINO cannot "
                 "infer in on this CPU is refused. Default: OpenVINO's choice for this CPU (bf16 where it has AMX/AVX512-BF16, else f32); "
                 "the activation log names the precision used")
      ->group(group);
  app.add_option("--ov-threads", threads_, "Inference threads (ov::inference_num_threads; 0: OpenVINO's default)")
      ->group(group);
  app.add_option("--ov-streams", streams_,
                 "Execution streams (ov::num_streams): how many inferences the compiled model runs at once, each "
                 "on its share of the threads (benchmark_app's -nstreams); unset: what the performance hint picks")
      ->group(group);
  app.add_option("--ov-perf-hint", perf_hint_, "Performance hint (ov::hint::performance_mode): latency or throughput")
      ->group(group);
  app.add_option("--ov-cache-dir", cache_dir_,
                 "Folder where OpenVINO caches compiled models (ov::cache_dir); later runs load them from there")
      ->group(group);
  app.add_option("--ov-min-shapes", min_shapes_,
                 "Dynamic shapes: the smallest shape of each bounded input, as in --input-shapes "
                 "(name:[d0,d1,...]); the model is compiled once for every shape between these and --ov-max-shapes")
      ->group(group);
  app.add_option("--ov-opt-shapes", opt_shapes_,
                 "Dynamic shapes: a typical shape of each bounded input (must lie within the bounds; OpenVINO's "
                 "CPU plugin has no optimization profile, so it is only checked)")
      ->group(group);
  app.add_option("--ov-max-shapes", max_shapes_, "Dynamic shapes: the largest shape of each bounded input")
      ->group(group);
  app.add_option("--ov-outputs", outputs_,
                 "Tensors OpenVINO returns besides the graph outputs: 'mark all', 'mark fused', names, or @file "
                 "(one name a line). Marking a tensor keeps OpenVINO from fusing it away, so 'mark all' may change "
                 "what runs; 'mark fused' (fusion-preserving) compiles the plain model first and marks only the "
                 "tensors its executed layers write out, each compared tensor naming its layer and the ONNX nodes "
                 "that layer covers. Tensors OpenVINO folded away (constants) are skipped")
      ->group(group);
  app.add_option("--ov-exclude-outputs", exclude_outputs_,
                 "Tensors --ov-outputs never marks (with 'mark all'): names, or @file (one name a line)")
      ->group(group);
}

void OpenvinoArgs::add_profiling_to(CLI::App& app) {
  app.add_option("--ov-profile-layers", profile_layers_,
                 "Profile OpenVINO's layers (ov::enable_profiling) and print the N that take the most time, summed "
                 "over the inferences: share of the total, mean time, layer type, kernel and precision")
      ->group("OpenVINO Compilation");
}

void OpenvinoArgs::parse(int openvino_runners) {
  options_ = {};
  if (!precision_.empty()) {
    runtime::check_openvino_precision(precision_);
    options_.precision = precision_;
  }
  if (threads_ != -1) {  // -1: not given
    check_backend_threads("--ov-threads", threads_);
    options_.threads = threads_;
  }
  if (!perf_hint_.empty()) options_.performance_hint = runtime::openvino_performance_hint(perf_hint_);
  if (streams_) {
    if (*streams_ < 1) raise<InvalidInputError>("--ov-streams must be at least 1, got {}", *streams_);
    options_.streams = streams_;
  }
  if (!cache_dir_.empty()) options_.cache_dir = cache_dir_;
  options_.min_shapes = parse_input_shapes(min_shapes_, "--ov-min-shapes");
  options_.opt_shapes = parse_input_shapes(opt_shapes_, "--ov-opt-shapes");
  options_.max_shapes = parse_input_shapes(max_shapes_, "--ov-max-shapes");
  options_.fused_outputs = outputs_ == std::vector<std::string>{"mark", "fused"};
  options_.outputs = options_.fused_outputs ? runtime::IntermediateOutputs::none()
                                            : parse_output_marks(outputs_, "--ov-outputs");
  options_.exclude_outputs = expand_tensor_entries(exclude_outputs_, "--ov-exclude-outputs");
  for (const auto& [flag, entries] : {std::pair{"--ov-outputs", options_.outputs.names},
                                      std::pair{"--ov-exclude-outputs", options_.exclude_outputs}})
    if (selects_by_graph(entries))
      raise<InvalidInputError>("{} takes tensor names and @file; op:, node: and re: entries are for --onnx-outputs and "
                               "--onnx-exclude-outputs",
                               flag);
  if (profile_layers_ < 0) raise<InvalidInputError>("--ov-profile-layers must be >= 0, got {}", profile_layers_);
  options_.profile_layers = profile_layers_;
  bool any = !precision_.empty() || threads_ != -1 || streams_.has_value() || !perf_hint_.empty() || !cache_dir_.empty() ||
             !min_shapes_.empty() || !opt_shapes_.empty() || !max_shapes_.empty() || !outputs_.empty() ||
             !exclude_outputs_.empty() || profile_layers_ != 0;
  if (any && openvino_runners == 0)
    raise<InvalidInputError>("the --ov-* options need an OpenVINO runner (--openvino)");
}

void OpenvinoArgs::add_runner_options(CLI::App& app) {
  add_to(app);
  add_profiling_to(app);
}

void OpenvinoArgs::parse_runner_options(int runners, bool hybrid) {
  parse(runners);
  if (hybrid && options_.outputs.mode != runtime::IntermediateOutputs::Mode::kNone)
    raise<InvalidInputError>("--ov-outputs marks tensors in one OpenVINO model; a hybrid run (--fallback) runs "
                             "several: give --onnx-outputs instead");
}

std::unique_ptr<runtime::Runner> OpenvinoArgs::make_runner(const runtime::ModelLoader& model,
                                                           const std::string& compiled_file) const {
  runtime::OpenvinoOptions options = options_;
  options.compiled_file = compiled_file;
  return std::make_unique<runtime::OpenvinoRunner>(model, std::move(options));
}

std::string OpenvinoArgs::add_script_runner(GeneratedScript& script, const std::string& onnx_model) const {
  script.add_import("parity.backend.openvino", "OpenVINORunner");
  return fmt::format("    OpenVINORunner({}{}),", onnx_model, add_to_script(script));
}

std::string OpenvinoArgs::add_to_script(GeneratedScript& script) const {
  std::string arguments;
  if (!precision_.empty()) arguments += ", precision=" + python_string(precision_);
  if (threads_ >= 0) arguments += fmt::format(", threads={}", threads_);
  if (!perf_hint_.empty()) arguments += ", performance_hint=" + python_string(perf_hint_);
  if (options_.streams) arguments += fmt::format(", streams={}", *options_.streams);
  if (!cache_dir_.empty()) arguments += ", cache_dir=" + script.path(cache_dir_);
  for (auto [flag, given] :
       {std::pair{"--ov-min-shapes", !min_shapes_.empty()}, std::pair{"--ov-opt-shapes", !opt_shapes_.empty()},
        std::pair{"--ov-max-shapes", !max_shapes_.empty()}, std::pair{"--ov-outputs", !outputs_.empty()},
        std::pair{"--ov-exclude-outputs", !exclude_outputs_.empty()},
        std::pair{"--ov-profile-layers", profile_layers_ != 0}})
    if (given) script.cannot_express(flag);
  return arguments;
}

}  // namespace parity::cli
