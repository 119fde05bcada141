#include "parity/debug/int8_candidate.h"

#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "parity/onnx/graph_order.h"
#include "parity/onnx/precision_keep_list.h"
#include "parity/quantize/qdq_insertion.h"

namespace parity::debug {
namespace {

onnx::Model copy_of(const onnx::Model& model) {
  return {std::make_shared<::onnx::ModelProto>(*model.proto), model.path, model.base_dir};
}

quantize::QuantizationPlan plan_keeping(onnx::Model& model, const std::vector<std::string>& entries) {
  onnx::PrecisionKeepList keep;
  keep.add_all(entries);
  return quantize::plan_quantization(model, std::move(keep));
}

// The plan's nodes in topological order, as PrecisionNodes (unnamed ones included, with empty names).
std::vector<PrecisionNode> planned_nodes(const onnx::Model& model, const quantize::QuantizationPlan& plan) {
  const std::set<int> planned(plan.node_indices.begin(), plan.node_indices.end());
  const auto& graph = model->graph();
  std::vector<PrecisionNode> nodes;
  for (int index : onnx::topological_order(graph))
    if (planned.count(index)) nodes.push_back({graph.node(index).name(), graph.node(index).op_type()});
  return nodes;
}

}  // namespace

Int8Candidates int8_candidates(const onnx::Model& fp32, const std::vector<std::string>& keep_fp32,
                               std::map<std::string, float> scales) {
  Int8Candidates candidates{copy_of(fp32), keep_fp32, std::move(scales)};
  plan_keeping(candidates.prepared, keep_fp32);
  return candidates;
}

Int8SearchSpace int8_search_space(const Int8Candidates& candidates) {
  onnx::Model model = copy_of(candidates.prepared);
  const auto searched = planned_nodes(model, plan_keeping(model, candidates.keep_fp32));
  Int8SearchSpace space;
  std::set<std::string> searched_names;
  for (const auto& node : searched) {
    if (node.name.empty()) {
      space.unnamed_op_types.push_back(node.op_type);
    } else {
      space.nodes.push_back(node);
      searched_names.insert(node.name);
    }
  }
  for (const auto& node : planned_nodes(model, plan_keeping(model, {})))
    if (!node.name.empty() && !searched_names.count(node.name)) space.kept_by_entries.push_back(node);
  return space;
}

onnx::Model quantize_keeping(const Int8Candidates& candidates, const std::vector<std::string>& kept_node_names) {
  onnx::Model model = copy_of(candidates.prepared);
  std::vector<std::string> entries = candidates.keep_fp32;
  for (const auto& name : kept_node_names) entries.push_back("node:" + name);
  const auto plan = plan_keeping(model, entries);
  quantize::insert_qdq(model, plan, candidates.scales);
  return model;
}

std::string python_regex_escape(const std::string& name) {
  std::string escaped;
  for (char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !std::isalnum(byte) && c != '_') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

std::string ort_nodes_to_exclude_json(const std::vector<PrecisionNode>& nodes) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& node : nodes) names.push_back(node.name);
  return names.dump(2) + "\n";
}

std::string modelopt_nodes_to_exclude_json(const std::vector<PrecisionNode>& nodes) {
  nlohmann::json patterns = nlohmann::json::array();
  for (const auto& node : nodes) patterns.push_back("^" + python_regex_escape(node.name) + "$");
  return patterns.dump(2) + "\n";
}

}  // namespace parity::debug
