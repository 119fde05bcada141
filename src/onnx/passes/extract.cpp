// surgeon extract: cut the main graph down to the nodes computing chosen tensors from chosen
// tensors.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"

namespace parity::onnx {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

namespace {

void set_value_info(::onnx::ValueInfoProto& info, const ExtractTensor& t, const char* role) {
  info.Clear();
  info.set_name(t.name);
  if (!t.dtype)
    raise<InvalidInputError>("{} '{}': its dtype could not be determined; give it explicitly (name:shape:dtype)",
                             role, t.name);
  auto* tensor_type = info.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(*t.dtype));
  if (t.shape) {
    auto* shape = tensor_type->mutable_shape();
    for (const auto& d : *t.shape) {
      auto* dim = shape->add_dim();
      if (d.value && *d.value >= 0) dim->set_dim_value(*d.value);
      else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
    }
  }
}

}  // namespace

void extract_subgraph(::onnx::ModelProto& model, const std::vector<ExtractTensor>& inputs,
                      const std::vector<ExtractTensor>& outputs) {
  GraphProto& graph = *model.mutable_graph();
  if (outputs.empty()) raise<InvalidInputError>("surgeon extract: no output tensors given");
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& o : graph.node(i).output())
      if (!o.empty()) producer[o] = i;
  std::unordered_set<std::string> initializers, graph_inputs;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  for (const auto& v : graph.input()) graph_inputs.insert(v.name());
  auto exists = [&](const std::string& name) {
    return producer.count(name) || initializers.count(name) || graph_inputs.count(name);
  };
  std::unordered_set<std::string> input_names;
  for (const auto& t : inputs) {
    if (!exists(t.name))
      raise<InvalidInputError>("input tensor '{}' does not exist in the model (not a graph input, an initializer "
                               "nor a node output)", t.name);
    if (!input_names.insert(t.name).second) raise<InvalidInputError>("input tensor '{}' is given twice", t.name);
  }
  std::unordered_set<std::string> output_names;
  for (const auto& t : outputs) {
    if (!exists(t.name))
      raise<InvalidInputError>("output tensor '{}' does not exist in the model (not a graph input, an initializer "
                               "nor a node output)", t.name);
    if (!output_names.insert(t.name).second) raise<InvalidInputError>("output tensor '{}' is given twice", t.name);
  }

  // Walk back from each output to the given inputs and constants.
  for (const auto& out : outputs) {
    bool reaches_input = false;
    std::unordered_set<std::string> seen;
    std::vector<std::pair<std::string, std::string>> stack{{out.name, out.name}};  // (tensor, reader)
    while (!stack.empty()) {
      auto [name, reader] = stack.back();
      stack.pop_back();
      if (!seen.insert(name).second) continue;
      if (input_names.count(name)) {
        reaches_input = true;
        continue;
      }
      auto it = producer.find(name);
      if (it != producer.end()) {
        const NodeProto& node = graph.node(it->second);
        for (const auto& r : node_reads(node)) stack.emplace_back(r, describe_node(node));
        continue;
      }
      if (initializers.count(name)) continue;
      if (graph_inputs.count(name))
        raise<InvalidInputError>("output tensor '{}' depends on graph input '{}' (read by {}), which is not among the "
                                 "given inputs: add it to --inputs or choose inputs closer to the output",
                                 out.name, name, reader == out.name ? "the output itself" : reader);
      raise<InvalidInputError>("output tensor '{}' depends on tensor '{}', which nothing produces", out.name, name);
    }
    if (!reaches_input && !inputs.empty())
      raise<InvalidInputError>("output tensor '{}' does not depend on any of the given inputs ({})", out.name,
                               fmt::join(std::vector<std::string>(input_names.begin(), input_names.end()), ", "));
  }

  auto infos = known_value_infos(graph);
  // Nodes producing a given input are cut off: the input now comes from outside.
  google::protobuf::RepeatedPtrField<NodeProto> kept;
  for (auto& node : *graph.mutable_node()) {
    bool produces_input = std::any_of(node.output().begin(), node.output().end(),
                                      [&](const std::string& o) { return input_names.count(o) > 0; });
    if (!produces_input) kept.Add(std::move(node));
  }
  graph.mutable_node()->Swap(&kept);
  auto* inits = graph.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i)
    if (input_names.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);

  graph.clear_input();
  for (const auto& t : inputs) set_value_info(*graph.add_input(), t, "input");
  graph.clear_output();
  for (auto t : outputs) {
    if (!t.shape)
      if (auto it = infos.find(t.name); it != infos.end() && it->second.shape) t.shape = it->second.shape;
    if (!t.dtype)
      if (auto it = infos.find(t.name); it != infos.end() && it->second.dtype != DType::kUndefined)
        t.dtype = it->second.dtype;
    set_value_info(*graph.add_output(), t, "output");
  }
  auto* value_infos = graph.mutable_value_info();
  for (int i = value_infos->size() - 1; i >= 0; --i)
    if (input_names.count(value_infos->Get(i).name()) || output_names.count(value_infos->Get(i).name()))
      value_infos->DeleteSubrange(i, 1);
  cleanup(graph, CleanupOptions{.remove_unused_graph_inputs = false, .recurse_subgraphs = false});
}

void make_graph_inputs(GraphProto& graph, const std::vector<std::string>& names) {
  if (names.empty()) return;
  auto infos = known_value_infos(graph);
  std::unordered_set<std::string> cut;
  for (const auto& name : names) {
    bool computed = std::any_of(graph.node().begin(), graph.node().end(), [&](const NodeProto& node) {
      return std::find(node.output().begin(), node.output().end(), name) != node.output().end();
    });
    if (!computed) raise<InvalidInputError>("tensor '{}' is computed by no node: it cannot become a graph input", name);
    auto info = infos.find(name);
    if (info == infos.end() || info->second.dtype == DType::kUndefined)
      raise<InvalidInputError>("tensor '{}' cannot become a graph input: its dtype is unknown (the model declares "
                               "none and shape inference derives none)",
                               name);
    if (!cut.insert(name).second) continue;
    auto* input = graph.add_input();
    input->set_name(name);
    input->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(info->second.dtype));
  }
  for (auto& node : *graph.mutable_node())
    for (auto& output : *node.mutable_output())
      if (cut.count(output)) output.clear();
  auto* value_infos = graph.mutable_value_info();
  for (int i = value_infos->size() - 1; i >= 0; --i)
    if (cut.count(value_infos->Get(i).name())) value_infos->DeleteSubrange(i, 1);
  cleanup(graph, CleanupOptions{.remove_unused_graph_inputs = false, .recurse_subgraphs = false});
}

}  // namespace parity::onnx
