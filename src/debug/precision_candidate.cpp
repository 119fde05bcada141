#include "parity/debug/precision_candidate.h"

#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/precision_keep_list.h"

namespace parity::debug {
namespace {

// Names of the float32 tensors of the main graph, from its inputs, outputs, value_info and initializers.
std::set<std::string> float32_tensors(const ::onnx::GraphProto& graph) {
  std::set<std::string> names;
  auto add = [&](const ::onnx::ValueInfoProto& value) {
    if (value.type().has_tensor_type() && value.type().tensor_type().elem_type() == ::onnx::TensorProto::FLOAT)
      names.insert(value.name());
  };
  for (const auto& value : graph.input()) add(value);
  for (const auto& value : graph.output()) add(value);
  for (const auto& value : graph.value_info()) add(value);
  for (const auto& tensor : graph.initializer())
    if (tensor.data_type() == ::onnx::TensorProto::FLOAT) names.insert(tensor.name());
  return names;
}


}  // namespace

PrecisionSearchSpace precision_search_space(const onnx::Model& fp32, const onnx::ReducedPrecisionOptions& options) {
  onnx::PrecisionKeepList always_kept;
  always_kept.add_all(options.keep_fp32);
  if (options.default_keep) always_kept.add_default_op_types();
  const auto& graph = fp32->graph();
  const auto floats = float32_tensors(graph);
  PrecisionSearchSpace space;
  for (int index : onnx::topological_order(graph)) {
    const auto& node = graph.node(index);
    bool produces_float = false;
    for (const auto& output : node.output()) produces_float = produces_float || floats.count(output);
    // A Constant is a value, not a computation: its readers' precision decides how it is read.
    if (!produces_float || onnx::is_constant_node(node) || always_kept.would_match(node)) continue;
    if (node.name().empty()) space.unnamed_op_types.push_back(node.op_type());
    else space.nodes.push_back({node.name(), node.op_type()});
  }
  return space;
}

onnx::Model convert_keeping(const onnx::Model& fp32, const onnx::ReducedPrecisionOptions& options,
                            const std::vector<std::string>& kept_node_names) {
  onnx::Model model{std::make_shared<::onnx::ModelProto>(*fp32.proto), fp32.path, fp32.base_dir};
  onnx::ReducedPrecisionOptions candidate = options;
  for (const auto& name : kept_node_names) candidate.keep_fp32.push_back("node:" + name);
  onnx::convert_float_to_reduced_precision(model, candidate);
  return model;
}

std::string keep_list_file_text(const std::vector<PrecisionNode>& kept, const std::vector<std::string>& header) {
  std::string text;
  for (const auto& line : header) text += fmt::format("# {}\n", line);
  for (const auto& node : kept) text += fmt::format("node:{}  # {}\n", node.name, node.op_type);
  return text;
}

}  // namespace parity::debug
