// Marking and unmarking graph outputs (parity/onnx/modify_outputs.h).
#include "parity/onnx/modify_outputs.h"

#include <unordered_map>
#include <unordered_set>

#include "parity/core/error.h"
#include "parity/onnx/passes.h"

namespace parity::onnx {
namespace {

// The names an output list may use: node outputs (Constant's included) and graph inputs.
std::unordered_set<std::string> known_tensor_names(const ::onnx::GraphProto& graph) {
  std::unordered_set<std::string> names;
  for (const auto& node : graph.node())
    for (const auto& output : node.output())
      if (!output.empty()) names.insert(output);
  for (const auto& input : graph.input()) names.insert(input.name());
  return names;
}

void check_known(const ::onnx::GraphProto& graph, const std::vector<std::string>& names, const char* what) {
  auto known = known_tensor_names(graph);
  for (const auto& name : names)
    if (!known.count(name))
      raise<InvalidInputError>("cannot {} tensor '{}': no node of the graph produces it and it is no graph input", what,
                               name);
}

}  // namespace

std::vector<std::string> markable_tensor_names(const ::onnx::GraphProto& graph) {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const auto& node : graph.node()) {
    if (is_constant_node(node)) continue;
    for (const auto& output : node.output())
      if (!output.empty() && seen.insert(output).second) names.push_back(output);
  }
  return names;
}

void mark_outputs(::onnx::GraphProto& graph, const std::vector<std::string>& names) {
  check_known(graph, names, "mark as an output");
  // What the graph says about each tensor, most specific last: an entry found later wins.
  std::unordered_map<std::string, ::onnx::ValueInfoProto> known;
  for (const auto& tensor : graph.initializer()) {
    ::onnx::ValueInfoProto value;
    value.set_name(tensor.name());
    auto* type = value.mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    auto* shape = type->mutable_shape();
    for (int64_t dim : tensor.dims()) shape->add_dim()->set_dim_value(dim);
    known[tensor.name()] = value;
  }
  for (const auto& value : graph.input()) known[value.name()] = value;
  for (const auto& value : graph.output()) known[value.name()] = value;
  for (const auto& value : graph.value_info()) known[value.name()] = value;

  graph.clear_output();
  std::unordered_set<std::string> marked;
  for (const auto& name : names) {
    if (!marked.insert(name).second) continue;
    auto it = known.find(name);
    if (it != known.end()) {
      *graph.add_output() = it->second;
    } else {
      graph.add_output()->set_name(name);
    }
  }
}

void mark_all_outputs(::onnx::GraphProto& graph) {
  mark_outputs(graph, markable_tensor_names(graph));
}

void unmark_outputs(::onnx::GraphProto& graph, const std::vector<std::string>& names) {
  check_known(graph, names, "unmark as an output");
  std::unordered_set<std::string> removed(names.begin(), names.end());
  auto* outputs = graph.mutable_output();
  for (int i = outputs->size() - 1; i >= 0; --i)
    if (removed.count(outputs->Get(i).name())) outputs->DeleteSubrange(i, 1);
}

}  // namespace parity::onnx
