#include "lint_onnxrt.h"

#include <map>
#include <regex>
#include <unordered_set>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"

namespace parity::runtime::detail {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

ValueTable run_node_on_onnxrt(const onnx::Model& owner, const ::onnx::NodeProto& node, const ConstantTable& constants,
                              const ValueTable& known, const OnnxrtOptions& options) {
  auto proto = std::make_shared<::onnx::ModelProto>();
  proto->set_ir_version(owner->ir_version());
  *proto->mutable_opset_import() = owner->opset_import();
  *proto->mutable_functions() = owner->functions();
  ::onnx::GraphProto& graph = *proto->mutable_graph();
  graph.set_name(node.name());
  *graph.add_node() = node;

  std::map<std::string, const ::onnx::ValueInfoProto*> declared;
  for (const auto& value : owner->graph().value_info()) declared[value.name()] = &value;
  for (const auto& value : owner->graph().output()) declared[value.name()] = &value;

  NamedTensors feed;
  std::unordered_set<std::string> added;
  for (const auto& read : onnx::node_reads(node)) {
    if (!added.insert(read).second) continue;
    if (auto value = known.find(read); value != known.end()) {
      if (!value->second.is_tensor())
        raise<UnsupportedError>("input '{}' is not a tensor; ONNX Runtime is fed tensors only", read);
      const Tensor& tensor = value->second.tensor();
      auto* input = graph.add_input();
      input->set_name(read);
      auto* type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(static_cast<int32_t>(tensor.dtype()));
      auto* shape = type->mutable_shape();
      for (int64_t dim : tensor.shape()) shape->add_dim()->set_dim_value(dim);
      feed.emplace_back(read, tensor);
    } else if (auto constant = constants.find(read); constant != constants.end()) {
      *graph.add_initializer() = *constant->second;
    }
  }
  for (const auto& output : node.output()) {
    if (output.empty()) continue;
    if (auto value = declared.find(output); value != declared.end())
      *graph.add_output() = *value->second;
    else
      graph.add_output()->set_name(output);
  }

  auto session = session_from_model(onnx::Model{proto, owner.path, owner.base_dir}, options);
  ValueTable values;
  for (auto& [name, tensor] : session->run(feed)) values[name] = ops::Value::of(std::move(tensor));
  return values;
}

std::string polygraphy_onnxrt_message(const std::string& onnxrt_message) {
  std::string message = onnxrt_message;
  replace_all(message, " : ", "");
  replace_all(message, "\"", "`");
  for (const char* filler : {"This is an invalid model. ", "Error: ", "Failed to load model with error: ",
                             "Exception caught: ", "Exception during loading: ", "\n"})
    replace_all(message, filler, "");

  // Each pattern, when it matches at the start of the message, is removed (wherever it occurs).
  static const std::vector<std::pair<std::regex, std::string>> patterns = {
      {std::regex(R"(\x1b(?:\[(?:\d+;){0,2}\d+m)(.*)\x1b\[m)"), "$1"},
      {std::regex(R"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+ \[.*?\] )"), ""},
      {std::regex(R"(Node \(.*\) Op \(.*\) \[ShapeInferenceError\])"), ""},
      {std::regex(R"(.*/.*\.cc:\d+ onnxruntime::.*\(.*\))"), ""},
      {std::regex(R"(In Node, .*, Error )"), ""},
      {std::regex(R"(.*Status Message: )"), ""},
  };
  for (const auto& [pattern, replacement] : patterns)
    if (std::regex_search(message, pattern, std::regex_constants::match_continuous))
      message = std::regex_replace(message, pattern, replacement);
  replace_all(message, "\n", "");
  return message;
}

}  // namespace parity::runtime::detail
