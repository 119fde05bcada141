#include "parity/runtime/passes/sanitize.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <fmt/ranges.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/onnxrt/symbolic_shape_inference.h"

namespace parity::runtime {
namespace {

// An input shape override naming a tensor that nodes compute but that is no graph input: as
// Polygraphy does, the graph is cut there and the tensor becomes a graph input (appended after the
// model's own), so the nodes only it needed are removed; a warning says so. A name that is no
// tensor at all (or an initializer) is left for override_input_shapes to refuse (Polygraphy:
// "Tensor: ... does not exist in the model").
void cut_at_non_inputs(::onnx::GraphProto& graph, const TensorMetadata& requested, const std::string& model_name) {
  TensorMetadata inputs = onnx::graph_inputs(graph);
  std::set<std::string> computed;
  for (const auto& node : graph.node()) computed.insert(node.output().begin(), node.output().end());
  std::vector<std::string> cut;
  for (const auto& [name, info] : requested)
    if (!inputs.contains(name) && computed.count(name)) cut.push_back(name);
  if (cut.empty()) return;
  int64_t nodes_before = graph.node_size();
  with_context(fmt::format("--override-input-shapes ({})", model_name), [&] { onnx::make_graph_inputs(graph, cut); });
  std::vector<std::string> quoted;
  for (const auto& name : cut) quoted.push_back(fmt::format("'{}'", name));
  log::warning("--override-input-shapes: {} not among the inputs of {}: the graph is cut there and the tensor(s) "
               "become graph inputs, as in Polygraphy; {} node(s) that no graph output needs any more were removed",
               fmt::join(quoted, ", "), model_name, nodes_before - graph.node_size());
}

void override_input_shapes(onnx::Model& model, const SanitizeOptions& options) {
  auto& graph = *model->mutable_graph();
  cut_at_non_inputs(graph, options.input_shapes, options.model_name);
  onnx::override_input_shapes(graph, options.input_shapes);
  log::info("Overriding input shapes to:\n{}", onnx::graph_inputs(graph).to_string());
  // Every shape downstream of the inputs is stale, the graph outputs' included: shape inference
  // (when on) derives them again from the new input shapes, as in Polygraphy. A graph output that
  // is now a graph input too is the input's tensor, with its shape.
  onnx::clear_value_info(graph);
  std::map<std::string, ::onnx::TypeProto> input_types;
  for (const auto& input : graph.input()) input_types.emplace(input.name(), input.type());
  for (auto& output : *graph.mutable_output()) {
    if (auto input = input_types.find(output.name()); input != input_types.end())
      *output.mutable_type() = input->second;
    else if (output.type().has_tensor_type())
      output.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  if (options.shape_inference) runtime::infer_shapes(model, options.allow_onnxruntime_shape_inference);
}

void fold(onnx::Model& model, const FoldOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto report = fold_constants(model, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log::info("    Total Nodes | Original: {:5}, After Folding: {:5} | {:5} Nodes Folded ({} pass(es), {} "
            "tensor(s) computed, {} from static shapes, {} If node(s) inlined) in {:.3f} s",
            report.nodes_before, report.nodes_after, report.nodes_before - report.nodes_after, report.passes,
            report.tensors_folded, report.shapes_folded, report.ifs_inlined, seconds);
  if (report.failed_evaluations)
    log::warning("{} evaluation(s) failed; the nodes they held were left in the graph (see the warnings above)",
                 report.failed_evaluations);
}

}  // namespace

void sanitize(onnx::Model& model, const SanitizeOptions& options) {
  auto& graph = *model->mutable_graph();
  std::optional<FoldOptions> fold_options = options.fold;
  if (!options.input_shapes.empty()) {
    override_input_shapes(model, options);
    if (fold_options && options.shape_inference) fold_options->shapes_inferred = true;
  }
  if (options.fallback_feed) set_shapes_from_metadata(graph, fallback_shape_inference(model, options.fallback_feed));
  if (fold_options) fold(model, *fold_options);
  if (options.cleanup) {
    auto report = onnx::cleanup(graph, onnx::CleanupOptions{.remove_unused_graph_inputs = true,
                                                            .recurse_subgraphs = true});
    log::info("Cleanup: removed {} node(s), {} initializer(s), {} unused graph input(s)", report.nodes_removed,
              report.initializers_removed, report.inputs_removed);
  }
  if (options.toposort) {
    onnx::toposort(graph);
    // ONNX's shape inference reads nodes in order: sorted, it reaches the tensors an unsorted graph hid.
    if (options.shape_inference) runtime::infer_shapes(model, options.allow_onnxruntime_shape_inference);
  }
}

}  // namespace parity::runtime
