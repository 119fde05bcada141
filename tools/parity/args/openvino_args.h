// The OpenVINO runner's flags (`--ov-*`), modelled on Polygraphy's TensorRT flags: precision,
// threads, performance hint, model cache folder, dynamic-shape bounds and marked outputs.
// The OpenVINO backend's argument group of the registry (args/backend_args.h); `convert --openvino`
// and `inspect model --openvino` use its flags too (add_to, parse).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "args/backend_args.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::cli {

class GeneratedScript;

class OpenvinoArgs : public BackendArgs {
 public:
  const runtime::BackendDescriptor& descriptor() const override { return runtime::find_backend("openvino"); }
  std::string flag_help() const override {
    return "Run OpenVINO on the CPU (repeatable; loaded at activation, see --ov-* options)";
  }
  // add_to and add_profiling_to.
  void add_runner_options(CLI::App& app) override;
  // parse; a hybrid run takes no --ov-outputs.
  void parse_runner_options(int runners, bool hybrid) override;
  std::unique_ptr<runtime::Runner> make_runner(const runtime::ModelLoader& model,
                                               const std::string& compiled_file) const override;
  std::string add_script_runner(GeneratedScript& script, const std::string& onnx_model) const override;
  std::string script_name() const override { return "OpenVINO"; }

  void add_to(CLI::App& app);
  // --ov-profile-layers, for commands that run inferences (run).
  void add_profiling_to(CLI::App& app);
  // Checks the values (before anything runs); `openvino_runners`: how many --openvino were given.
  void parse(int openvino_runners);
  runtime::OpenvinoOptions options() const { return options_; }
  // --gen-script: the OpenVINORunner keyword arguments (", precision='bf16', ..."); the flags the
  // Python API cannot express are refused through `script`.
  std::string add_to_script(GeneratedScript& script) const;
  // --ov-outputs as parsed (none when not given), for the layerwise comparison.
  const runtime::IntermediateOutputs& outputs() const { return options_.outputs; }
  const std::vector<std::string>& exclude_outputs() const { return options_.exclude_outputs; }
  // --ov-outputs mark fused (the fusion-preserving layerwise mode).
  bool fused_outputs() const { return options_.fused_outputs; }
  // Whether any tensor would be marked (--ov-outputs in any form, --ov-exclude-outputs).
  bool marks_tensors() const {
    return options_.outputs.mode != runtime::IntermediateOutputs::Mode::kNone || options_.fused_outputs ||
           !options_.exclude_outputs.empty();
  }

 private:
  std::string precision_, perf_hint_, cache_dir_;
  int threads_ = -1;
  std::optional<int> streams_;  // --ov-streams
  int profile_layers_ = 0;
  std::vector<std::string> min_shapes_, opt_shapes_, max_shapes_, outputs_, exclude_outputs_;
  runtime::OpenvinoOptions options_;
};

}  // namespace parity::cli
