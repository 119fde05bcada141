#include "parity/onnx/data_propagation_check.h"

#include <fmt/format.h>

#include <cstring>
#include <unordered_map>
#include <vector>

namespace parity::onnx {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

// The values of an INT32/INT64 tensor stored in the proto itself; nullopt for another element
// type or external data (which data propagation does not read either).
std::optional<std::vector<int64_t>> integer_values(const TensorProto& tensor) {
  if (tensor.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  std::vector<int64_t> values;
  if (tensor.data_type() == TensorProto::INT64) {
    if (tensor.has_raw_data()) {
      const std::string& raw = tensor.raw_data();
      values.resize(raw.size() / sizeof(int64_t));
      if (!values.empty()) std::memcpy(values.data(), raw.data(), values.size() * sizeof(int64_t));
    } else {
      values.assign(tensor.int64_data().begin(), tensor.int64_data().end());
    }
  } else if (tensor.data_type() == TensorProto::INT32) {
    if (tensor.has_raw_data()) {
      const std::string& raw = tensor.raw_data();
      std::vector<int32_t> narrow(raw.size() / sizeof(int32_t));
      if (!narrow.empty()) std::memcpy(narrow.data(), raw.data(), narrow.size() * sizeof(int32_t));
      values.assign(narrow.begin(), narrow.end());
    } else {
      values.assign(tensor.int32_data().begin(), tensor.int32_data().end());
    }
  } else {
    return std::nullopt;
  }
  return values;
}

// A constant's values where they can be read; an empty optional inside when the name is a
// constant of another kind (float, external data): data propagation reads none of those.
using Constants = std::unordered_map<std::string, std::optional<std::vector<int64_t>>>;

void add_constant_node(const NodeProto& node, Constants& constants) {
  if (node.output_size() != 1) return;
  std::optional<std::vector<int64_t>> values;
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == "value" && attribute.has_t()) values = integer_values(attribute.t());
    else if (attribute.name() == "value_int") values = std::vector<int64_t>{attribute.i()};
    else if (attribute.name() == "value_ints")
      values = std::vector<int64_t>(attribute.ints().begin(), attribute.ints().end());
  }
  constants[node.output(0)] = std::move(values);
}

// The node's name, else its first output's (an unnamed node is known by what it writes).
std::string node_label(const NodeProto& node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0) name = node.output(0);
  return fmt::format("node '{}' (Slice)", name);
}

std::optional<std::string> check_slice(const NodeProto& node, const Constants& constants) {
  if (node.input_size() < 5 || node.input(4).empty()) return std::nullopt;
  const auto constant = constants.find(node.input(4));
  if (constant == constants.end()) {
    return fmt::format("{}: steps '{}' are computed in the graph, so ONNX's data propagation would step with values "
                       "that cannot be checked first",
                       node_label(node), node.input(4));
  }
  if (!constant->second) return std::nullopt;
  for (int64_t step : *constant->second) {
    if (step > kLargestDataPropagationSliceStep || step < -kLargestDataPropagationSliceStep)
      return fmt::format("{}: step {} would overflow the 32-bit index of ONNX's Slice data propagation (|step| above {})",
                         node_label(node), step, kLargestDataPropagationSliceStep);
  }
  return std::nullopt;
}

std::optional<std::string> check_nodes(const google::protobuf::RepeatedPtrField<NodeProto>& nodes, Constants constants);

std::optional<std::string> check_graph(const GraphProto& graph, Constants constants) {
  for (const auto& initializer : graph.initializer()) constants[initializer.name()] = integer_values(initializer);
  // A graph input shadows an outer constant of the same name: its value comes with the run.
  for (const auto& input : graph.input()) {
    bool initialized = false;
    for (const auto& initializer : graph.initializer()) initialized = initialized || initializer.name() == input.name();
    if (!initialized) constants.erase(input.name());
  }
  return check_nodes(graph.node(), std::move(constants));
}

std::optional<std::string> check_nodes(const google::protobuf::RepeatedPtrField<NodeProto>& nodes, Constants constants) {
  for (const auto& node : nodes) {
    if (node.op_type() == "Constant" && node.domain().empty()) add_constant_node(node, constants);
  }
  for (const auto& node : nodes) {
    if (node.op_type() == "Slice" && (node.domain().empty() || node.domain() == "ai.onnx")) {
      if (auto problem = check_slice(node, constants)) return problem;
    }
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) {
        if (auto problem = check_graph(attribute.g(), constants)) return problem;
      }
      for (const auto& graph : attribute.graphs()) {
        if (auto problem = check_graph(graph, constants)) return problem;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> slice_unsafe_for_data_propagation(const ::onnx::ModelProto& model) {
  if (auto problem = check_graph(model.graph(), {})) return problem;
  for (const auto& function : model.functions()) {
    if (auto problem = check_nodes(function.node(), {})) return problem;
  }
  return std::nullopt;
}

}  // namespace parity::onnx
