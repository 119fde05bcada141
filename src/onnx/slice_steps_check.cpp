#include "parity/onnx/slice_steps_check.h"

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "parity/core/error.h"

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

// Where a constant's values are: an initializer, or the attribute of a Constant node that holds
// them (nullptr for a Constant of another kind: a float, a string, a sparse tensor). Read only for
// the steps of a Slice, so large integer weights are never copied.
using Constant = std::variant<const TensorProto*, const AttributeProto*>;
using Constants = std::unordered_map<std::string, Constant>;

// The integer values of a constant; nullopt where data propagation could not read them either.
std::optional<std::vector<int64_t>> constant_values(const Constant& constant) {
  if (const auto* tensor = std::get_if<const TensorProto*>(&constant)) return integer_values(**tensor);
  const AttributeProto* attribute = std::get<const AttributeProto*>(constant);
  if (!attribute) return std::nullopt;
  if (attribute->has_t()) return integer_values(attribute->t());
  if (attribute->type() == AttributeProto::INT) return std::vector<int64_t>{attribute->i()};
  return std::vector<int64_t>(attribute->ints().begin(), attribute->ints().end());
}

void add_constant_node(const NodeProto& node, Constants& constants) {
  if (node.output_size() != 1) return;
  const AttributeProto* values = nullptr;
  for (const auto& attribute : node.attribute()) {
    if ((attribute.name() == "value" && attribute.has_t()) || attribute.name() == "value_int" ||
        attribute.name() == "value_ints")
      values = &attribute;
  }
  constants[node.output(0)] = values;
}

// The node's name, else its first output's (an unnamed node is known by what it writes).
std::string node_label(const NodeProto& node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0) name = node.output(0);
  return fmt::format("node '{}' (Slice)", name);
}

std::optional<UnsafeSliceStep> check_slice(const NodeProto& node, const Constants& constants,
                                           const SliceStepRange& range) {
  if (node.input_size() < 5 || node.input(4).empty()) return std::nullopt;
  const auto constant = constants.find(node.input(4));
  if (constant == constants.end()) {
    if (range.computed_steps_allowed) return std::nullopt;
    return UnsafeSliceStep{node_label(node), node.input(4), std::nullopt};
  }
  const std::optional<std::vector<int64_t>> steps = constant_values(constant->second);
  if (!steps) return std::nullopt;
  for (int64_t step : *steps) {
    if (step < range.lowest || step > range.highest) return UnsafeSliceStep{node_label(node), node.input(4), step};
  }
  return std::nullopt;
}

std::optional<UnsafeSliceStep> check_nodes(const google::protobuf::RepeatedPtrField<NodeProto>& nodes,
                                           Constants constants, const SliceStepRange& range);

std::optional<UnsafeSliceStep> check_graph(const GraphProto& graph, Constants constants, const SliceStepRange& range) {
  // A graph input shadows an outer constant of the same name (its value comes with the run); an
  // initializer of this graph is its default, a constant here.
  for (const auto& input : graph.input()) constants.erase(input.name());
  for (const auto& initializer : graph.initializer()) constants[initializer.name()] = &initializer;
  return check_nodes(graph.node(), std::move(constants), range);
}

std::optional<UnsafeSliceStep> check_nodes(const google::protobuf::RepeatedPtrField<NodeProto>& nodes,
                                           Constants constants, const SliceStepRange& range) {
  for (const auto& node : nodes) {
    if (node.op_type() == "Constant" && node.domain().empty()) add_constant_node(node, constants);
  }
  for (const auto& node : nodes) {
    if (node.op_type() == "Slice" && (node.domain().empty() || node.domain() == "ai.onnx")) {
      if (auto problem = check_slice(node, constants, range)) return problem;
    }
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) {
        if (auto problem = check_graph(attribute.g(), constants, range)) return problem;
      }
      for (const auto& graph : attribute.graphs()) {
        if (auto problem = check_graph(graph, constants, range)) return problem;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<UnsafeSliceStep> first_unsafe_slice_step(const ::onnx::ModelProto& model, const SliceStepRange& range) {
  if (auto problem = check_graph(model.graph(), {}, range)) return problem;
  for (const auto& function : model.functions()) {
    if (auto problem = check_nodes(function.node(), {}, range)) return problem;
  }
  return std::nullopt;
}

std::optional<std::string> slice_unsafe_for_data_propagation(const ::onnx::ModelProto& model) {
  auto problem = first_unsafe_slice_step(model, SliceStepRange{});
  if (!problem) return std::nullopt;
  if (!problem->step)
    return fmt::format("{}: steps '{}' are computed in the graph, so ONNX's data propagation would step with values "
                       "that cannot be checked first",
                       problem->node, problem->steps);
  return fmt::format("{}: step {} would overflow the 32-bit index of ONNX's Slice data propagation (|step| above {})",
                     problem->node, *problem->step, kLargestSafeSliceStep);
}

bool model_validation_skipped() {
  const char* value = std::getenv("PARITY_SKIP_MODEL_VALIDATION");
  return value && std::string_view(value) == "1";
}

void check_slice_steps_for_openvino(const ::onnx::ModelProto& model, const std::string& model_label) {
  if (model_validation_skipped()) return;
  SliceStepRange range{-kLargestSafeSliceStep, INT64_MAX, /*computed_steps_allowed=*/true};
  auto problem = first_unsafe_slice_step(model, range);
  if (!problem) return;
  raise<InvalidInputError>("{}: {}: step {} is below -{}, which OpenVINO's CPU plugin truncates and divides by when it "
                           "slices a dynamic shape (SIGFPE); the model is not handed to OpenVINO",
                           model_label, problem->node, *problem->step, kLargestSafeSliceStep);
}

}  // namespace parity::onnx
