#include "parity/onnx/node_range.h"

#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"

namespace parity::onnx {

std::string describe_node_range(int begin, int end) {
  return end - begin == 1 ? fmt::format("node {}", begin)
                          : fmt::format("nodes {}-{}", begin, end - 1);
}

Model extract_node_range(const Model& model, int begin, int end) {
  const ::onnx::GraphProto& graph = model->graph();
  if (begin < 0 || end > graph.node_size() || begin >= end)
    raise<InvalidInputError>("{} of a graph of {} nodes: no such range",
                             describe_node_range(begin, end), graph.node_size());
  std::map<std::string, const ::onnx::TypeProto*> types;
  for (const auto& value : graph.input()) types.emplace(value.name(), &value.type());
  for (const auto& value : graph.value_info()) types.emplace(value.name(), &value.type());
  for (const auto& value : graph.output()) types.emplace(value.name(), &value.type());
  std::unordered_map<std::string, const ::onnx::TensorProto*> initializers;
  for (const auto& initializer : graph.initializer())
    initializers.emplace(initializer.name(), &initializer);
  std::set<std::string> graph_inputs, graph_outputs;
  for (const auto& value : graph.input()) graph_inputs.insert(value.name());
  for (const auto& value : graph.output()) graph_outputs.insert(value.name());

  std::set<std::string> produced_inside, read_outside, read_anywhere;
  std::unordered_map<std::string, int> constant_producers;
  for (int index = 0; index < graph.node_size(); ++index) {
    const auto& node = graph.node(index);
    const bool inside = index >= begin && index < end;
    for (const auto& name : node_reads(node)) {
      read_anywhere.insert(name);
      if (!inside) read_outside.insert(name);
    }
    for (const auto& output : node.output()) {
      if (output.empty()) continue;
      if (inside)
        produced_inside.insert(output);
      else if (node.op_type() == "Constant" &&
               (node.domain().empty() || node.domain() == "ai.onnx"))
        constant_producers.emplace(output, index);
    }
  }

  auto type_of = [&](const std::string& name, const char* role) -> const ::onnx::TypeProto& {
    auto found = types.find(name);
    if (found == types.end() || found->second->value_case() == ::onnx::TypeProto::VALUE_NOT_SET ||
        (found->second->has_tensor_type() && found->second->tensor_type().elem_type() == 0))
      raise<InvalidInputError>(
          "tensor '{}' ({} of {}) has no known type: the graph cannot be cut there (shape "
          "inference could not type it)",
          name, role, describe_node_range(begin, end));
    return *found->second;
  };

  Model result;
  result.proto = std::make_shared<::onnx::ModelProto>(*model.proto);
  result.path = model.path;
  result.base_dir = model.base_dir;
  ::onnx::GraphProto& cut = *result.proto->mutable_graph();
  cut.clear_node();
  cut.clear_input();
  cut.clear_output();
  cut.clear_initializer();
  cut.clear_sparse_initializer();
  cut.clear_value_info();

  std::set<std::string> seen;
  for (int index = begin; index < end; ++index) {
    for (const auto& name : node_reads(graph.node(index))) {
      if (produced_inside.count(name) || !seen.insert(name).second) continue;
      if (initializers.count(name) && !graph_inputs.count(name)) {
        *cut.add_initializer() = *initializers.at(name);
      } else if (auto constant = constant_producers.find(name);
                 constant != constant_producers.end()) {
        *cut.add_node() = graph.node(constant->second);
      } else {
        auto* input = cut.add_input();
        input->set_name(name);
        *input->mutable_type() = type_of(name, "an input");
      }
    }
  }
  for (const auto& sparse : graph.sparse_initializer())
    if (seen.count(sparse.values().name())) *cut.add_sparse_initializer() = sparse;
  for (int index = begin; index < end; ++index) {
    const auto& node = graph.node(index);
    *cut.add_node() = node;
    for (const auto& output : node.output()) {
      if (output.empty()) continue;
      if (graph_outputs.count(output) || read_outside.count(output) ||
          !read_anywhere.count(output)) {
        auto* value = cut.add_output();
        value->set_name(output);
        *value->mutable_type() = type_of(output, "an output");
      } else if (auto found = types.find(output); found != types.end()) {
        auto* value = cut.add_value_info();
        value->set_name(output);
        *value->mutable_type() = *found->second;
      }
    }
  }
  if (cut.output_size() == 0)
    raise<InvalidInputError>("{} produce nothing used: no outputs to cut them out with",
                             describe_node_range(begin, end));
  return result;
}

}  // namespace parity::onnx
