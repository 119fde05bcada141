#include "parity/quantize/qdq_version.h"

#include <set>
#include <string>
#include <unordered_map>
#include <vector>


namespace parity::quantize {

int take_qdq_versions(onnx::Model& model, const onnx::Model& quantized) {
  const ::onnx::GraphProto& source = quantized->graph();
  std::unordered_map<std::string, const ::onnx::NodeProto*> by_name, producer;
  for (const auto& node : source.node()) {
    if (!node.name().empty()) by_name[node.name()] = &node;
    for (const auto& output : node.output()) producer[output] = &node;
  }
  std::unordered_map<std::string, const ::onnx::TensorProto*> source_initializers;
  for (const auto& initializer : source.initializer()) source_initializers[initializer.name()] = &initializer;

  ::onnx::GraphProto& graph = *model.proto->mutable_graph();
  std::set<std::string> initializers, made;
  for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
  auto copy_initializer = [&](const std::string& name) {
    auto it = source_initializers.find(name);
    if (it != source_initializers.end() && initializers.insert(name).second) *graph.add_initializer() = *it->second;
  };
  auto producer_of = [&](const std::string& name, const char* op) -> const ::onnx::NodeProto* {
    auto it = producer.find(name);
    return it != producer.end() && it->second->op_type() == op ? it->second : nullptr;
  };

  std::vector<::onnx::NodeProto> nodes;
  int replaced = 0;
  for (const auto& node : graph.node()) {
    auto found = node.name().empty() ? by_name.end() : by_name.find(node.name());
    if (found == by_name.end() || found->second->op_type() != node.op_type() ||
        found->second->input_size() != node.input_size()) {
      nodes.push_back(node);
      continue;
    }
    const ::onnx::NodeProto& version = *found->second;
    ::onnx::NodeProto copy = node;
    bool changed = false;
    for (int i = 0; i < node.input_size(); ++i) {
      const ::onnx::NodeProto* dequantize = producer_of(version.input(i), "DequantizeLinear");
      if (!dequantize) continue;
      const ::onnx::NodeProto* quantize = producer_of(dequantize->input(0), "QuantizeLinear");
      // The tensor the Q/DQ chain quantizes is, in `model`, the node's own input (renamed there,
      // perhaps: the chain's outputs take the same suffix).
      const std::string& floating = quantize ? quantize->input(0) : std::string();
      std::string suffix;
      if (quantize && node.input(i).starts_with(floating)) suffix = node.input(i).substr(floating.size());
      for (const auto* qdq : {quantize, dequantize}) {
        if (!qdq) continue;
        for (int k = 0; k < qdq->input_size(); ++k) copy_initializer(qdq->input(k));
        if (!made.insert(qdq->output(0) + suffix).second) continue;
        ::onnx::NodeProto added = *qdq;
        added.set_name(qdq->name() + suffix);
        if (qdq == quantize) added.set_input(0, node.input(i));
        else if (quantize) added.set_input(0, quantize->output(0) + suffix);
        added.set_output(0, qdq->output(0) + suffix);
        nodes.push_back(std::move(added));
      }
      copy.set_input(i, dequantize->output(0) + suffix);
      changed = true;
    }
    replaced += changed ? 1 : 0;
    nodes.push_back(std::move(copy));
  }
  graph.clear_node();
  for (auto& node : nodes) *graph.add_node() = std::move(node);
  return replaced;
}

}  // namespace parity::quantize
