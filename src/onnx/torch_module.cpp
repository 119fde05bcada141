#include "parity/onnx/torch_module.h"

#include <string_view>
#include <vector>

namespace parity::onnx {
namespace {

// "torch.nn.modules.linear.Linear" -> "Linear".
std::string_view own_name(std::string_view qualified) {
  const auto dot = qualified.rfind('.');
  return dot == std::string_view::npos ? qualified : qualified.substr(dot + 1);
}

void collect(const ::onnx::GraphProto& graph, std::unordered_map<std::string, std::string>& out) {
  for (const auto& node : graph.node()) {
    if (!node.name().empty())
      if (auto module = torch_module(node)) out.emplace(node.name(), std::move(*module));
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect(attribute.g(), out);
      for (const auto& subgraph : attribute.graphs()) collect(subgraph, out);
    }
  }
}

}  // namespace

std::optional<std::string> torch_module(const ::onnx::NodeProto& node) {
  std::string_view stack;
  for (const auto& property : node.metadata_props())
    if (property.key() == "namespace") stack = property.value();
  // A module stack starts at the top module, whose path is empty (": <class>"); operations outside any
  // module (the sizes of dynamic dims) have a placeholder stack instead
  // ("_empty_nn_module_stack_from_metadata_hook: ...").
  if (!stack.starts_with(": ")) return std::nullopt;
  // The segments before the last one are the modules; the last is the exported operation.
  const auto last = stack.rfind('/');
  if (last == std::string_view::npos) return std::nullopt;
  const std::string_view modules = stack.substr(0, last);
  const auto start = modules.rfind('/');
  const std::string_view innermost = start == std::string_view::npos ? modules : modules.substr(start + 1);
  const auto colon = innermost.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view path = innermost.substr(0, colon);
  const std::string_view cls = own_name(innermost.substr(colon + 2));
  if (cls.empty()) return std::nullopt;
  if (path.empty()) return std::string(cls);
  return std::string(path) + ": " + std::string(cls);
}

std::unordered_map<std::string, std::string> torch_modules(const ::onnx::GraphProto& graph) {
  std::unordered_map<std::string, std::string> out;
  collect(graph, out);
  return out;
}

}  // namespace parity::onnx
