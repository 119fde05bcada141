#include "ref_model_check.h"

#include <map>
#include <set>
#include <string>

#include <onnx/defs/schema.h>

#include "parity/core/error.h"

namespace parity::runtime {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::OpSchemaRegistry;
using ::onnx::TensorProto;

std::string label(const onnx::Model& model) { return model.path.empty() ? "<model>" : model.path.string(); }

const char* attribute_type_name(int type) {
  return AttributeProto::AttributeType_IsValid(type)
             ? AttributeProto::AttributeType_Name(static_cast<AttributeProto::AttributeType>(type)).c_str()
             : "UNKNOWN";
}

// A tensor value's declared element type: 0 (UNDEFINED) is refused for graph inputs (the feed
// would have no type to check against); a number outside ONNX's enum anywhere.
void check_element_type(const onnx::Model& model, const ::onnx::ValueInfoProto& value, const char* role,
                        bool undefined_allowed) {
  if (!value.has_type() || !value.type().has_tensor_type() || !value.type().tensor_type().has_elem_type()) return;
  const int elem_type = value.type().tensor_type().elem_type();
  if (elem_type == TensorProto::UNDEFINED && undefined_allowed) return;
  if (elem_type == TensorProto::UNDEFINED || !TensorProto::DataType_IsValid(elem_type))
    raise<InvalidInputError>("{}: {} '{}' has element type {}, {}", label(model), role, value.name(), elem_type,
                             elem_type == 0 ? "UNDEFINED" : "which ONNX does not define");
}

void check_nodes(const onnx::Model& model, const GraphProto& graph, const std::map<std::string, int>& opsets) {
  for (const auto& node : graph.node()) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const auto opset = opsets.find(domain);
    const auto* schema = opset == opsets.end() ? nullptr
                                               : OpSchemaRegistry::Schema(node.op_type(), opset->second, domain);
    for (const auto& attribute : node.attribute()) {
      if (schema && attribute.ref_attr_name().empty() && attribute.type() != AttributeProto::UNDEFINED) {
        const auto declared = schema->attributes().find(attribute.name());
        if (declared != schema->attributes().end() && declared->second.type != attribute.type())
          raise<InvalidInputError>("{}: node '{}' ({}): attribute '{}' is {}, but {} takes {}", label(model),
                                   node.name(), node.op_type(), attribute.name(), attribute_type_name(attribute.type()),
                                   node.op_type(), attribute_type_name(declared->second.type));
      }
      if (attribute.has_g()) check_nodes(model, attribute.g(), opsets);
      for (const auto& subgraph : attribute.graphs()) check_nodes(model, subgraph, opsets);
    }
  }
}

}  // namespace

void check_model_for_reference(const onnx::Model& model) {
  const ::onnx::ModelProto& proto = *model.proto;
  if (proto.ir_version() > ::onnx::IR_VERSION)
    raise<InvalidInputError>("{}: IR version {} is newer than {}, the newest this build's ONNX knows", label(model),
                             proto.ir_version(), static_cast<int>(::onnx::IR_VERSION));
  std::map<std::string, int> opsets;
  const auto& known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& import : proto.opset_import()) {
    const std::string domain = import.domain() == "ai.onnx" ? "" : import.domain();
    opsets[domain] = static_cast<int>(import.version());
    const auto range = known.find(domain);
    if (range != known.end() && import.version() > range->second.second)
      raise<InvalidInputError>("{}: opset {} of domain '{}' is newer than {}, the newest this build's ONNX knows",
                               label(model), import.version(), import.domain(), range->second.second);
  }
  std::set<std::string> inputs;
  for (const auto& input : proto.graph().input()) {
    if (!inputs.insert(input.name()).second)
      raise<InvalidInputError>("{}: graph input '{}' is declared more than once", label(model), input.name());
    check_element_type(model, input, "graph input", /*undefined_allowed=*/false);
  }
  for (const auto& output : proto.graph().output())
    check_element_type(model, output, "graph output", /*undefined_allowed=*/true);
  check_nodes(model, proto.graph(), opsets);
}

}  // namespace parity::runtime
