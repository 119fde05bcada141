// The runner flags shared by commands that run a model (Polygraphy's runner argument groups):
// --ref, --onnxrt and --openvino (repeatable, in command-line order) and each backend's options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "args/openvino_args.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::cli {

class GeneratedScript;

class RunnerArgs {
 public:
  void add_to(CLI::App& app);
  // Checks the values (before anything runs, so bad flags fail fast).
  void parse();
  // The runners in command-line order, each loading its model through `model` when it activates.
  // `compiled_file`: a compiled OpenVINO model file given as the model, which only --openvino
  // runners can run (others: InvalidInputError).
  std::vector<std::unique_ptr<runtime::Runner>> make_runners(const runtime::ModelLoader& model,
                                                             const std::string& compiled_file = "") const;
  // How many runners the command line selects.
  int runner_count() const { return ref_count_ + onnxrt_count_ + openvino_count_; }
  // The flags that select runners, for messages ("--ref, --onnxrt").
  static const char* runner_flags() { return "--ref, --onnxrt, --openvino"; }
  // --gen-script: what the loaders start from and change before the runners get the model.
  struct ScriptModel {
    std::string path;
    std::string external_data_dir;
    runtime::IntermediateOutputs outputs;    // --onnx-outputs
    std::vector<std::string> exclude_outputs;  // --onnx-exclude-outputs
  };
  // The "# Loaders" and "# Runners" sections (runners in command-line order) and the summary line.
  void add_to_script(GeneratedScript& script, const ScriptModel& model) const;
  // The --ov-* options (--ov-outputs for the layerwise comparison).
  const OpenvinoArgs& openvino() const { return openvino_; }

 private:
  CLI::App* app_ = nullptr;
  CLI::Option* ref_flag_ = nullptr;
  CLI::Option* onnxrt_flag_ = nullptr;
  CLI::Option* openvino_flag_ = nullptr;
  int ref_count_ = 0, onnxrt_count_ = 0, openvino_count_ = 0;
  OpenvinoArgs openvino_;
  std::string fallback_;  // --fallback: "ref" or "onnxrt" (--openvino runs hybrid)
  std::string ref_precision_ = "fp32";
  std::vector<std::string> providers_;
  std::string ort_opt_level_;
  int ort_intra_threads_ = 0;
  std::string ort_library_;
  std::string ort_profile_;
  int64_t ort_layerwise_budget_mib_ = 64;  // ppocrv4_det 640x640: 216 MiB peak at 64, 378 at 256
};

}  // namespace parity::cli
