// Parsing of the flags that mark tensors as outputs (--onnx-outputs, --ov-outputs): "mark all",
// names, or @file (one name a line, '#' comments); and the argument group that changes the outputs
// of a model a command saves (surgeon sanitize's --outputs/--exclude-outputs, convert's
// --onnx-outputs/--onnx-exclude-outputs: Polygraphy's OnnxLoadArgs outputs options).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/onnx/model.h"
#include "parity/runtime/runner.h"

namespace parity::cli {

runtime::IntermediateOutputs parse_output_marks(const std::vector<std::string>& args, const std::string& flag);

class SavedOutputsArgs {
 public:
  // `prefix`: "" gives --outputs/--exclude-outputs, "onnx-" --onnx-outputs/--onnx-exclude-outputs.
  explicit SavedOutputsArgs(std::string prefix) : prefix_(std::move(prefix)) {}
  void add_to(CLI::App& app);
  // Whether either flag was given.
  bool given() const { return !outputs_.empty() || !exclude_outputs_.empty(); }
  // Marks the outputs (replacing the graph's), then unmarks the excluded ones, as Polygraphy's
  // ModifyOutputs does. InvalidInputError naming the flag, `model_path` and the tensor for a
  // tensor the graph does not have or a malformed list.
  void apply(onnx::Model& model, const std::string& model_path) const;

 private:
  std::string prefix_;
  std::vector<std::string> outputs_, exclude_outputs_;
};

}  // namespace parity::cli
