// Parsing of the flags that mark tensors as outputs (--onnx-outputs, --ov-outputs): "mark all",
// or tensor entries; and the argument group that changes the outputs of a model a command saves
// (surgeon sanitize's --outputs/--exclude-outputs, convert's --onnx-outputs/--onnx-exclude-outputs:
// Polygraphy's OnnxLoadArgs outputs options).
//
// A tensor entry (the --keep-fp32 syntax, for tensors) is one of:
//   NAME         a tensor name
//   op:TYPE      every output of every main-graph node of that op type (op:Constant)
//   node:NAME    every output of that node
//   re:PATTERN   every tensor (node output or graph output) whose name the ECMAScript pattern is
//                found in
//   @PATH        entries from a file, one a line; a line starting with '#' is a comment, blank
//                lines are skipped; a file cannot include another
#pragma once

#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/onnx/model.h"
#include <onnx/onnx_pb.h>

#include "parity/runtime/runner.h"

namespace parity::cli {

// "mark all", or the entries (each @file replaced by its lines), unresolved: op:, node: and re:
// entries need the model (resolve_tensor_entries).
runtime::IntermediateOutputs parse_output_marks(const std::vector<std::string>& args, const std::string& flag);
// The entries of a tensor-list flag with each @file replaced by its lines, in order.
std::vector<std::string> expand_tensor_entries(const std::vector<std::string>& args, const std::string& flag);
// Whether an entry needs the model to say which tensors it selects (op:, node:, re:).
bool selects_by_graph(const std::vector<std::string>& entries);
// The tensors `entries` (expanded) select in `graph`, in order, each once; a plain name is kept as
// it is (the caller checks it names a tensor). InvalidInputError naming `flag` for a node: or re:
// entry that selects nothing, a bad pattern or an empty entry; an op type no node has is a warning.
std::vector<std::string> resolve_tensor_entries(const std::vector<std::string>& entries,
                                                const ::onnx::GraphProto& graph, const std::string& flag);

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
// Sets `model`'s graph outputs to what a run with these marks returns and compares (`run
// --save-onnx`), less the `exclude`d names: for "mark all", every output of a node other than a
// Constant in node order (Polygraphy's mark_layerwise), then any graph output not among them that
// no Constant produces; for a
// list, the graph outputs, then the listed tensors not among them. Types as onnx::mark_outputs
// gives them; InvalidInputError for a name no node produces and no graph input is.
void mark_graph_outputs(::onnx::ModelProto& model, const runtime::IntermediateOutputs& marks,
                        const std::set<std::string>& exclude);

}  // namespace parity::cli
