// Finding and bounding unbounded data-dependent shapes (parity/onnx/unbounded_dds.h).
#include "parity/onnx/unbounded_dds.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "parity/core/dtype.h"
#include "parity/core/dtype_dispatch.h"
#include "parity/core/error.h"
#include "parity/onnx/model.h"
#include "parity/onnx/passes.h"

namespace parity::onnx {
namespace {

using Dimension = ::onnx::TensorShapeProto::Dimension;

// Which input of each op sets its output's size.
const std::map<std::string, std::vector<int>>& size_inputs() {
  static const std::map<std::string, std::vector<int>> inputs = {
      {"Range", {1}}, {"Pad", {1}}, {"Resize", {3}}, {"Tile", {1}}, {"Expand", {1}},
  };
  return inputs;
}

// The type the main graph declares for each tensor (value_info, then graph inputs, then outputs).
std::unordered_map<std::string, const ::onnx::TypeProto*> declared_types(const ::onnx::GraphProto& graph) {
  std::unordered_map<std::string, const ::onnx::TypeProto*> types;
  for (const auto& [name, value] : declared_values(graph)) types[name] = &value->type();
  return types;
}

const ::onnx::TensorShapeProto* declared_shape(const ::onnx::TypeProto* type) {
  if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return nullptr;
  return &type->tensor_type().shape();
}

// Node indices in ONNX-GraphSurgeon's toposort order: by depth (0: no input computed by a node),
// stable.
std::vector<int> graph_surgeon_order(const ::onnx::GraphProto& graph, const std::set<std::string>& constants,
                                     const std::unordered_map<std::string, int>& producer) {
  std::vector<int> depth(static_cast<std::size_t>(graph.node_size()), -1);
  std::vector<bool> visiting(depth.size(), false);
  std::function<int(int)> depth_of = [&](int index) -> int {
    auto& d = depth[static_cast<std::size_t>(index)];
    if (d >= 0) return d;
    if (visiting[static_cast<std::size_t>(index)]) return 0;  // a cycle: the model is invalid anyway
    visiting[static_cast<std::size_t>(index)] = true;
    int level = 0;
    for (const auto& input : graph.node(index).input()) {
      auto it = producer.find(input);
      if (!input.empty() && it != producer.end() && !constants.count(input))
        level = std::max(level, depth_of(it->second) + 1);
    }
    return d = level;
  };
  std::vector<int> order(depth.size());
  for (int i = 0; i < graph.node_size(); ++i) order[static_cast<std::size_t>(i)] = i;
  for (int i : order) depth_of(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return depth[static_cast<std::size_t>(a)] < depth[static_cast<std::size_t>(b)];
  });
  return order;
}

std::unordered_map<std::string, int> producers(const ::onnx::GraphProto& graph) {
  std::unordered_map<std::string, int> producer;  // tensor -> index of the node computing it
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& output : graph.node(i).output())
      if (!output.empty()) producer[output] = i;
  return producer;
}

// A name not yet used by any tensor or initializer of the graph: `base`, else base_1, base_2...
std::string unused_name(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string name = base;
  for (int suffix = 1; taken.count(name); ++suffix) name = base + "_" + std::to_string(suffix);
  taken.insert(name);
  return name;
}

std::unordered_set<std::string> tensor_names(const ::onnx::GraphProto& graph) {
  std::unordered_set<std::string> names;
  for (const auto& node : graph.node()) {
    names.insert(node.input().begin(), node.input().end());
    names.insert(node.output().begin(), node.output().end());
  }
  for (const auto& value : graph.input()) names.insert(value.name());
  for (const auto& value : graph.output()) names.insert(value.name());
  for (const auto& value : graph.value_info()) names.insert(value.name());
  for (const auto& tensor : graph.initializer()) names.insert(tensor.name());
  names.erase("");
  return names;
}

template <typename T>
bool fits_in(int64_t value) {
  if (value < 0)
    return std::numeric_limits<T>::is_signed && value >= static_cast<int64_t>(std::numeric_limits<T>::min());
  return static_cast<uint64_t>(value) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
}

std::string element_type_name(int32_t element_type) {
  return element_type >= 1 && element_type <= 28 ? std::string(dtype_info(static_cast<DType>(element_type)).onnx_name)
                                                 : std::to_string(element_type);
}

// The bound as an initializer of the bounded tensor's element type: a scalar, or a 1-D tensor of
// one element (broadcast along the last dim).
::onnx::TensorProto bound_initializer(const std::string& name, const std::string& tensor, int32_t element_type,
                                      int64_t bound, bool scalar) {
  ::onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(element_type);
  if (!scalar) proto.add_dims(1);
  // Each type in the field ONNX stores it in: int64_data, int32_data (the narrower integers),
  // uint64_data (uint32, uint64), float_data, double_data.
  using BoundableTypes = decltype(IntTypes{} + TypeList<float, double>{});
  const bool fits = visit_dtype<BoundableTypes>(
      static_cast<DType>(element_type),
      [&]<typename T>() {
        if constexpr (std::is_same_v<T, int64_t>) proto.add_int64_data(bound);
        else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>)
          proto.add_uint64_data(static_cast<uint64_t>(bound));
        else if constexpr (std::is_integral_v<T>) proto.add_int32_data(static_cast<int32_t>(bound));
        else if constexpr (std::is_same_v<T, float>) proto.add_float_data(static_cast<float>(bound));
        else proto.add_double_data(static_cast<double>(bound));
        if constexpr (std::is_integral_v<T>) return fits_in<T>(bound);
        else return true;
      },
      [&]() -> bool {
        raise<UnsupportedError>(
            "cannot bound tensor '{}' of element type {}: integer, float and double tensors can "
            "be bounded",
            tensor, element_type_name(element_type));
      });
  if (!fits)
    raise<InvalidInputError>("upper bound {} of tensor '{}' does not fit its element type {}", bound, tensor,
                             element_type_name(element_type));
  return proto;
}

}  // namespace

std::vector<std::string> find_unbounded_dds_tensors(const ::onnx::GraphProto& graph) {
  auto types = declared_types(graph);
  std::set<std::string> constants;
  for (const auto& tensor : graph.initializer()) constants.insert(tensor.name());
  auto producer = producers(graph);

  std::set<std::string> dynamic_dims;
  for (const auto& value : graph.input())
    for (const auto& dim : value.type().tensor_type().shape().dim())
      if (dim.value_case() == Dimension::kDimParam) dynamic_dims.insert(dim.dim_param());

  std::vector<std::string> found;
  std::set<std::string> found_names;
  for (int index : graph_surgeon_order(graph, constants, producer)) {
    const auto& node = graph.node(index);
    bool check = false;
    for (const auto& output : node.output()) {
      auto it = types.find(output);
      const auto* shape = declared_shape(it == types.end() ? nullptr : it->second);
      if (!shape) {
        check = true;
        continue;
      }
      for (const auto& dim : shape->dim())
        if (dim.value_case() == Dimension::kDimParam && dynamic_dims.insert(dim.dim_param()).second)
          check = true;  // only the node that introduces a name
    }
    auto inputs = size_inputs().find(node.op_type());
    if (!check || inputs == size_inputs().end()) continue;
    for (int input_index : inputs->second) {
      if (input_index >= node.input_size()) continue;
      const std::string& input = node.input(input_index);
      auto made_by = producer.find(input);
      if (input.empty() || constants.count(input) || made_by == producer.end() ||
          graph.node(made_by->second).op_type() == "Min")
        continue;
      if (found_names.insert(input).second) found.push_back(input);
      break;  // one tensor per node
    }
  }
  return found;
}

UpperBoundReport set_unbounded_dds_upper_bounds(::onnx::GraphProto& graph, const UpperBounds& bounds) {
  std::unordered_set<std::string> taken = tensor_names(graph);
  std::vector<std::string> targets = find_unbounded_dds_tensors(graph);
  std::unordered_set<std::string> unbounded(targets.begin(), targets.end());
  std::unordered_map<std::string, int64_t> listed;
  UpperBoundReport report;
  for (const auto& [name, bound] : bounds.per_tensor) {
    if (!taken.count(name)) raise<InvalidInputError>("cannot bound tensor '{}': the graph has no such tensor", name);
    if (!listed.count(name) && !unbounded.count(name)) {
      report.not_unbounded.push_back(name);
      targets.push_back(name);
    }
    listed[name] = bound;  // the last bound given for a tensor wins
  }

  auto types = declared_types(graph);
  for (const auto& name : targets) {
    auto it = listed.find(name);
    if (it == listed.end() && !bounds.default_bound) continue;
    int64_t bound = it != listed.end() ? it->second : *bounds.default_bound;
    auto producer_of = producers(graph);
    auto producer = producer_of.find(name);
    if (producer == producer_of.end())
      raise<InvalidInputError>("cannot bound tensor '{}': no node produces it (a graph input or an initializer)", name);
    const int node_index = producer->second;

    auto type = types.find(name);
    const ::onnx::TypeProto* tensor_type = type == types.end() ? nullptr : type->second;
    int32_t element_type = ::onnx::TensorProto::INT64;
    if (tensor_type && tensor_type->has_tensor_type() && tensor_type->tensor_type().elem_type() != 0)
      element_type = tensor_type->tensor_type().elem_type();
    const auto* shape = declared_shape(tensor_type);
    const bool scalar = !shape || shape->dim_size() == 0;
    std::string bound_name = unused_name(name + "_upper_bound", taken);
    ::onnx::TensorProto bound_tensor = bound_initializer(bound_name, name, element_type, bound, scalar);
    *graph.add_initializer() = std::move(bound_tensor);

    std::string copy_name = unused_name(name + "_copy", taken);
    auto& producer_node = *graph.mutable_node(node_index);
    for (auto& output : *producer_node.mutable_output())
      if (output == name) output = copy_name;
    for (const auto& value : graph.value_info())
      if (value.name() == name) {
        auto copy = value;
        copy.set_name(copy_name);
        *graph.add_value_info() = std::move(copy);
        break;
      }

    ::onnx::NodeProto min;
    min.set_op_type("Min");
    min.set_name(unused_name(name + "_upper_bound_min", taken));
    min.add_input(copy_name);
    min.add_input(bound_name);
    min.add_output(name);
    // Right after its producer: protobuf appends, then the new node bubbles back into place.
    *graph.add_node() = std::move(min);
    for (int i = graph.node_size() - 1; i > node_index + 1; --i) graph.mutable_node()->SwapElements(i, i - 1);
    types = declared_types(graph);
    report.applied.emplace_back(name, bound);
  }
  cleanup(graph, CleanupOptions{.remove_unused_graph_inputs = false, .recurse_subgraphs = true});
  return report;
}

}  // namespace parity::onnx
