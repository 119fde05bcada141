// The runner flags shared by commands that run a model (Polygraphy's runner argument groups): one
// flag per backend of the registry (--ref, --onnxrt, --openvino; repeatable, in command-line order),
// --fallback (a hybrid run) and each backend's option group (args/backend_args.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "args/backend_args.h"
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
  // `compiled_file`: a compiled model file given as the model, which only the runners of a backend
  // that runs compiled files can run (others: InvalidInputError).
  std::vector<std::unique_ptr<runtime::Runner>> make_runners(const runtime::ModelLoader& model,
                                                             const std::string& compiled_file = "") const;
  // How many runners the command line selects.
  int runner_count() const;
  // Throws InvalidInputError naming `command` when a selected runner loads a model of its own
  // (--torch): commands that run changed or cut ONNX models (debug reduce, debug precision) cannot use it.
  void refuse_runners_without_onnx_model(const std::string& command) const;
  // Whether a selected runner needs an ONNX model (every backend but those that load a model of
  // their own, BackendDescriptor::runs_without_onnx_model).
  bool needs_onnx_model() const;
  // The flags that select runners, for messages ("--ref, --onnxrt, --openvino").
  static std::string runner_flags();
  // --gen-script: what the loaders start from and change before the runners get the model.
  struct ScriptModel {
    std::string path;
    std::string external_data_dir;
    runtime::IntermediateOutputs outputs;    // --onnx-outputs
    std::vector<std::string> exclude_outputs;  // --onnx-exclude-outputs
  };
  // The "# Loaders" and "# Runners" sections (runners in command-line order) and the summary line.
  void add_to_script(GeneratedScript& script, const ScriptModel& model) const;
  // The --ov-* options (--ov-outputs for the layerwise comparison, debug precision's split).
  const OpenvinoArgs& openvino() const;

 private:
  // A backend's flag, how many times it was given, and its option group.
  struct Backend {
    std::unique_ptr<BackendArgs> args;
    CLI::Option* flag = nullptr;
    int count = 0;
  };
  const Backend& backend(const std::string& name) const;

  CLI::App* app_ = nullptr;
  std::vector<Backend> backends_;
  std::string fallback_;  // --fallback: a backend that can be a hybrid run's fallback
};

}  // namespace parity::cli
