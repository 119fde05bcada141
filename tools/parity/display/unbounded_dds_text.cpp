#include "display/unbounded_dds_text.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "parity/core/python_format.h"
#include "parity/core/dtype.h"
#include "parity/core/logger.h"
#include "parity/onnx/model.h"
#include "parity/onnx/unbounded_dds.h"

namespace parity::cli {
namespace {

// What the graph declares about a tensor: dims (a name, a value, or unknown) and element type.
struct DeclaredTensor {
  std::optional<std::vector<std::string>> shape;  // dims as Python reprs ("'N'", "3", "None"); none: unknown rank
  std::string dtype = "None";
};

// ONNX-GraphSurgeon's element type: numpy's dtype name, or the ONNX enum value where numpy has
// no such type (bfloat16, float8; it warns once per type).
class GraphSurgeonTypes {
 public:
  std::string dtype_text(int32_t onnx_type) {
    bool numpy_has = onnx_type >= 1 && onnx_type <= 28 && !(onnx_type >= 16 && onnx_type <= 20);
    if (numpy_has) return onnx_type == 8 ? "object" : std::string(dtype_name(static_cast<DType>(onnx_type)));
    if (warned_.insert(onnx_type).second) {
      std::string name = onnx_type >= 1 && onnx_type <= 28
                             ? std::string(dtype_info(static_cast<DType>(onnx_type)).onnx_name)
                             : onnx_type == 0 ? "UNDEFINED" : std::to_string(onnx_type);
      log::warning("Could not convert: {} to a corresponding NumPy type. The original ONNX type will be preserved. ",
                   name);
    }
    return std::to_string(onnx_type);
  }
  // The element type GraphSurgeon reads from a value's type, if any.
  static std::optional<int32_t> element_type(const ::onnx::TypeProto& type) {
    if (type.has_tensor_type()) return type.tensor_type().elem_type();
    if (type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type())
      return type.sequence_type().elem_type().tensor_type().elem_type();
    if (type.has_sparse_tensor_type()) return type.sparse_tensor_type().elem_type();
    return std::nullopt;
  }
  // Reads every tensor's type in GraphSurgeon's import order, for its warnings.
  void import_graph(const ::onnx::GraphProto& graph) {
    for (const auto& tensor : graph.initializer()) dtype_text(tensor.data_type());
    for (const auto& tensor : graph.sparse_initializer()) dtype_text(tensor.values().data_type());
    std::set<std::string> initializers;
    for (const auto& tensor : graph.initializer()) initializers.insert(tensor.name());
    auto read = [&](const ::onnx::ValueInfoProto& value) {
      if (auto type = element_type(value.type())) dtype_text(*type);
    };
    for (const auto& value : graph.value_info()) read(value);
    for (const auto& value : graph.input())
      if (!initializers.count(value.name())) read(value);
    for (const auto& value : graph.output()) read(value);
    for (const auto& node : graph.node())
      for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) import_graph(attribute.g());
        for (const auto& subgraph : attribute.graphs()) import_graph(subgraph);
      }
  }

 private:
  std::set<int32_t> warned_;
};

DeclaredTensor declared(const ::onnx::ValueInfoProto& value, GraphSurgeonTypes& types) {
  DeclaredTensor out;
  const auto& type = value.type();
  if (auto element = GraphSurgeonTypes::element_type(type)) out.dtype = types.dtype_text(*element);
  if (type.has_tensor_type()) {
    if (type.tensor_type().has_shape()) {
      out.shape.emplace();
      for (const auto& dim : type.tensor_type().shape().dim()) {
        if (dim.value_case() == ::onnx::TensorShapeProto::Dimension::kDimParam) {
          out.shape->push_back(python_str_repr(dim.dim_param()));
        } else if (dim.value_case() == ::onnx::TensorShapeProto::Dimension::kDimValue) {
          out.shape->push_back(std::to_string(dim.dim_value()));
        } else {
          out.shape->push_back("None");
        }
      }
    }
  }
  return out;
}

std::string variable_text(const std::string& name, const DeclaredTensor& tensor) {
  std::string shape = "None";
  if (tensor.shape) shape = fmt::format("[{}]", fmt::join(*tensor.shape, ", "));
  return fmt::format("Variable ({}): (shape={}, dtype={})", name, shape, tensor.dtype);
}

}  // namespace

std::string unbounded_dds_text(const ::onnx::ModelProto& model) {
  bool has_default_opset = std::any_of(model.opset_import().begin(), model.opset_import().end(), [](const auto& opset) {
    return opset.domain().empty() || opset.domain() == "ai.onnx";
  });
  if (!has_default_opset) log::warning("Model does not contain ONNX domain opset information! Using default opset.");
  GraphSurgeonTypes types;
  types.import_graph(model.graph());

  const auto& graph = model.graph();
  std::unordered_map<std::string, DeclaredTensor> tensors;
  for (const auto& [name, value] : onnx::declared_values(graph)) tensors[name] = declared(*value, types);

  std::vector<std::string> found;
  for (const auto& name : onnx::find_unbounded_dds_tensors(graph)) {
    auto it = tensors.find(name);
    found.push_back(variable_text(name, it == tensors.end() ? DeclaredTensor{} : it->second));
  }
  return fmt::format("[{}]", fmt::join(found, ", "));
}

}  // namespace parity::cli
