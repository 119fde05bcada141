// The executed layers of a compiled OpenVINO model, mapped back to ONNX nodes
// (parity/runtime/openvino/openvino_engine_report.h).
#include "parity/runtime/openvino/openvino_engine_report.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "openvino_backend.h"
#include "parity/core/error.h"
#include "parity/core/json_depth.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {
namespace {

EngineLayer::Kind kind_of(const std::string& layer_type) {
  if (layer_type == "Input" || layer_type == "Parameter") return EngineLayer::Kind::kInput;
  if (layer_type == "Output" || layer_type == "Result") return EngineLayer::Kind::kOutput;
  if (layer_type == "Const" || layer_type == "Constant") return EngineLayer::Kind::kConstant;
  if (layer_type == "Reorder") return EngineLayer::Kind::kReorder;
  return EngineLayer::Kind::kCompute;
}

const char* kind_name(EngineLayer::Kind kind) {
  switch (kind) {
    case EngineLayer::Kind::kInput:
      return "input";
    case EngineLayer::Kind::kOutput:
      return "output";
    case EngineLayer::Kind::kConstant:
      return "constant";
    case EngineLayer::Kind::kReorder:
      return "reorder";
    case EngineLayer::Kind::kCompute:
      return "compute";
  }
  return "compute";
}

bool is_executed(const EngineLayer& layer) {
  return layer.kind == EngineLayer::Kind::kCompute || layer.kind == EngineLayer::Kind::kReorder;
}

// ONNX compute node identifiers (name, else first output) and the lookups the mapping uses.
class OnnxNodeIndex {
 public:
  explicit OnnxNodeIndex(const onnx::Model& model) {
    for (const auto& node : model->graph().node()) {
      if (node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx")) continue;
      std::string id = !node.name().empty() ? node.name() : node.output_size() ? node.output(0) : "";
      if (id.empty() || position_.count(id)) continue;
      position_.emplace(id, nodes_.size());
      nodes_.push_back(id);
      if (!node.name().empty()) by_name_.emplace(node.name(), id);
      for (const auto& output : node.output())
        if (!output.empty()) by_tensor_.emplace(output, id);
    }
    std::set<std::string> graph_outputs;
    for (const auto& output : model->graph().output()) graph_outputs.insert(output.name());
    consumers_.resize(nodes_.size());
    feeds_graph_output_.assign(nodes_.size(), false);
    for (const auto& node : model->graph().node()) {
      std::string id = !node.name().empty() ? node.name() : node.output_size() ? node.output(0) : "";
      auto self = position_.find(id);
      if (self != position_.end())
        for (const auto& output : node.output())
          if (graph_outputs.count(output)) feeds_graph_output_[self->second] = true;
      for (const auto& input : node.input()) {
        auto producer = by_tensor_.find(input);
        if (producer == by_tensor_.end() || self == position_.end()) continue;
        auto& list = consumers_[position_.at(producer->second)];
        if (std::find(list.begin(), list.end(), self->second) == list.end()) list.push_back(self->second);
      }
    }
  }
  // Positions of the compute nodes reading an output of node `position`.
  const std::vector<std::size_t>& consumers(std::size_t position) const { return consumers_[position]; }
  bool feeds_graph_output(std::size_t position) const { return feeds_graph_output_[position]; }
  const std::vector<std::string>& nodes() const { return nodes_; }
  std::size_t position(const std::string& id) const { return position_.at(id); }

  // The ONNX node an OpenVINO original name comes from, or "" (see the header).
  std::string node_of(const std::string& original) const {
    std::string name = original;
    while (true) {
      if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
      if (auto it = by_tensor_.find(name); it != by_tensor_.end()) return it->second;
      auto slash = name.rfind('/');
      if (slash == std::string::npos || slash == 0) return "";
      name.resize(slash);
    }
  }

 private:
  std::vector<std::string> nodes_;
  std::unordered_map<std::string, std::size_t> position_;
  std::unordered_map<std::string, std::string> by_name_, by_tensor_;
  std::vector<std::vector<std::size_t>> consumers_;
  std::vector<bool> feeds_graph_output_;
};

// Attributes nodes no executed layer names to the one layer all their consumers are in (see the
// header); `layer_of[node]`: index into `layers` or -1. Reverse graph order resolves chains in one
// pass; repeated until nothing changes.
void attribute_by_dataflow(const OnnxNodeIndex& index, const std::set<std::string>& in_constants,
                           std::vector<long>& layer_of, std::vector<EngineLayer>& layers) {
  const auto& nodes = index.nodes();
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t n = nodes.size(); n-- > 0;) {
      if (layer_of[n] >= 0 || in_constants.count(nodes[n]) || index.feeds_graph_output(n)) continue;
      const auto& consumers = index.consumers(n);
      if (consumers.empty()) continue;
      long layer = layer_of[consumers.front()];
      bool same = layer >= 0 && std::all_of(consumers.begin(), consumers.end(),
                                            [&](std::size_t consumer) { return layer_of[consumer] == layer; });
      if (!same) continue;
      layer_of[n] = layer;
      layers[static_cast<std::size_t>(layer)].dataflow_nodes.push_back(nodes[n]);
      changed = true;
    }
  }
  for (auto& layer : layers)
    std::sort(layer.dataflow_nodes.begin(), layer.dataflow_nodes.end(),
              [&](const auto& a, const auto& b) { return index.position(a) < index.position(b); });
}

std::string join(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

std::string counts_text(const std::map<std::string, std::size_t>& counts) {
  std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [key, count] : sorted) parts.push_back(fmt::format("{}: {}", key.empty() ? "<none>" : key, count));
  return join(parts);
}

}  // namespace

std::size_t EngineReport::executed_layers() const {
  return static_cast<std::size_t>(std::count_if(layers.begin(), layers.end(), is_executed));
}

std::map<std::string, std::size_t> EngineReport::layers_per_precision() const {
  std::map<std::string, std::size_t> counts;
  for (const auto& layer : layers)
    if (is_executed(layer)) ++counts[layer.runtime_precision];
  return counts;
}

std::map<std::string, std::size_t> EngineReport::layers_per_kernel() const {
  std::map<std::string, std::size_t> counts;
  for (const auto& layer : layers)
    if (is_executed(layer)) ++counts[layer.kernel];
  return counts;
}

std::string EngineReport::to_text(bool show_layers, bool show_attrs) const {
  std::string out = "==== OpenVINO Compiled Model ====\n";
  out += fmt::format("Model: {} | OpenVINO: {} | Device: {} | Inference precision: {}\n", model, openvino_version,
                     device, inference_precision);
  std::size_t constants = 0, listed = 0;
  for (const auto& layer : layers) constants += layer.kind == EngineLayer::Kind::kConstant;
  if (show_layers)
    out += fmt::format("\n---- {} Layer(s) in execution order ({} constant(s) not listed) ----",
                       layers.size() - constants, constants);
  for (const auto& layer : layers) {
    if (!show_layers || layer.kind == EngineLayer::Kind::kConstant) continue;
    std::string kind = layer.kind == EngineLayer::Kind::kCompute ? "" : fmt::format(" ({})", kind_name(layer.kind));
    out += fmt::format("\nLayer {:<4} | {} [{}]{} | kernel: {} | precision: {} -> {} | output shapes: {}", listed++,
                       layer.name, layer.layer_type, kind, layer.kernel, layer.runtime_precision,
                       layer.output_precisions, join(layer.output_shapes));
    if (has_onnx) {
      if (!layer.onnx_nodes.empty()) out += fmt::format("\n    ONNX nodes: {}", join(layer.onnx_nodes));
      if (!layer.dataflow_nodes.empty())
        out += fmt::format("\n    ONNX nodes (by dataflow): {}", join(layer.dataflow_nodes));
      if (!layer.openvino_ops.empty()) out += fmt::format("\n    OpenVINO ops: {}", join(layer.openvino_ops));
    } else if (!layer.original_names.empty() && layer.kind != EngineLayer::Kind::kInput &&
               layer.kind != EngineLayer::Kind::kOutput) {
      out += fmt::format("\n    Original ops: {}", join(layer.original_names));
    }
    if (show_attrs && has_onnx && !layer.original_names.empty())
      out += fmt::format("\n    originalLayersNames: {}", join(layer.original_names));
  }
  auto is_reorder = [](const EngineLayer& layer) { return layer.kind == EngineLayer::Kind::kReorder; };
  std::size_t reorders = std::count_if(layers.begin(), layers.end(), is_reorder);
  out += fmt::format("{}---- Summary ----\nExecuted layers: {} ({} reorder(s))", show_layers ? "\n\n" : "\n",
                     executed_layers(), reorders);
  if (has_onnx) {
    out += fmt::format("\nONNX compute nodes: {} | covered by executed layers: {} ({} by dataflow) | folded into "
                       "constants: {} | removed: {}",
                       onnx_compute_nodes, covered_nodes.size(), dataflow_covered, folded_nodes.size(),
                       removed_nodes.size());
    if (!folded_nodes.empty()) out += fmt::format("\nFolded into constants: {}", join(folded_nodes));
    if (!removed_nodes.empty()) out += fmt::format("\nRemoved: {}", join(removed_nodes));
  } else {
    out += "\nONNX nodes: not known for a compiled model file written without its ONNX node map (convert the ONNX "
           "model again, or inspect it with --openvino, to map layers to its nodes)";
  }
  out += fmt::format("\nLayers per precision: {}", counts_text(layers_per_precision()));
  out += fmt::format("\nLayers per kernel: {}", counts_text(layers_per_kernel()));
  return out;
}

void EngineReport::add_onnx_coverage(nlohmann::ordered_json& json) const {
  json["onnx_compute_nodes"] = onnx_compute_nodes;
  json["covered_nodes"] = covered_nodes;
  json["dataflow_covered"] = dataflow_covered;
  json["folded_nodes"] = folded_nodes;
  json["removed_nodes"] = removed_nodes;
}

nlohmann::ordered_json EngineReport::to_json() const {
  nlohmann::ordered_json json;
  json["model"] = model;
  json["openvino_version"] = openvino_version;
  json["device"] = device;
  json["inference_precision"] = inference_precision;
  json["layers"] = nlohmann::ordered_json::array();
  for (const auto& layer : layers) {
    nlohmann::ordered_json entry;
    entry["name"] = layer.name;
    entry["kind"] = kind_name(layer.kind);
    entry["layer_type"] = layer.layer_type;
    entry["kernel"] = layer.kernel;
    entry["runtime_precision"] = layer.runtime_precision;
    entry["output_precisions"] = layer.output_precisions;
    entry["output_shapes"] = layer.output_shapes;
    entry["original_names"] = layer.original_names;
    if (has_onnx) {
      entry["onnx_nodes"] = layer.onnx_nodes;
      entry["dataflow_nodes"] = layer.dataflow_nodes;
      entry["openvino_ops"] = layer.openvino_ops;
    }
    json["layers"].push_back(std::move(entry));
  }
  nlohmann::ordered_json summary;
  summary["executed_layers"] = executed_layers();
  summary["layers_per_precision"] = layers_per_precision();
  summary["layers_per_kernel"] = layers_per_kernel();
  if (has_onnx) add_onnx_coverage(summary);
  json["summary"] = std::move(summary);
  return json;
}

std::string EngineReport::onnx_map_text() const {
  nlohmann::ordered_json map;
  add_onnx_coverage(map);
  nlohmann::ordered_json per_layer = nlohmann::ordered_json::object();
  for (const auto& layer : layers) {
    if (layer.kind == EngineLayer::Kind::kConstant ||
        (layer.onnx_nodes.empty() && layer.dataflow_nodes.empty() && layer.openvino_ops.empty()))
      continue;
    per_layer[layer.name] = {{"onnx_nodes", layer.onnx_nodes},
                             {"dataflow_nodes", layer.dataflow_nodes},
                             {"openvino_ops", layer.openvino_ops}};
  }
  map["layers"] = std::move(per_layer);
  return map.dump();  // one line: JSON escapes line breaks inside names
}

void EngineReport::apply_onnx_map(const std::string& text, const std::string& file) {
  check_json_depth(text, file);
  try {
    const nlohmann::json map = nlohmann::json::parse(text);
    onnx_compute_nodes = map.at("onnx_compute_nodes").get<std::size_t>();
    covered_nodes = map.at("covered_nodes").get<std::vector<std::string>>();
    dataflow_covered = map.at("dataflow_covered").get<std::size_t>();
    folded_nodes = map.at("folded_nodes").get<std::vector<std::string>>();
    removed_nodes = map.at("removed_nodes").get<std::vector<std::string>>();
    const auto& per_layer = map.at("layers");
    for (auto& layer : layers) {
      auto it = per_layer.find(layer.name);
      if (it == per_layer.end() || layer.kind == EngineLayer::Kind::kConstant) continue;
      layer.onnx_nodes = it->at("onnx_nodes").get<std::vector<std::string>>();
      layer.dataflow_nodes = it->at("dataflow_nodes").get<std::vector<std::string>>();
      layer.openvino_ops = it->at("openvino_ops").get<std::vector<std::string>>();
    }
  } catch (const nlohmann::json::exception& error) {
    raise<FileError>("{}: damaged compiled model header: its onnx-map is not an ONNX node map: {}", file,
                     error.what());
  }
  has_onnx = true;
}

EngineReport describe_openvino_engine(const OpenvinoRunner& runner, const onnx::Model* onnx_model) {
  EngineReport report;
  report.model = runner.model_label();
  report.openvino_version = runner.library().version;
  report.inference_precision = runner.inference_precision();
  std::optional<OnnxNodeIndex> index;
  if (onnx_model) index.emplace(*onnx_model);
  report.has_onnx = index.has_value();
  std::set<std::string> in_executed, in_constants;
  for (auto& executed : runner.executed_layers()) {
    EngineLayer layer;
    layer.kind = kind_of(executed.layer_type);
    layer.name = std::move(executed.name);
    layer.layer_type = std::move(executed.layer_type);
    layer.kernel = std::move(executed.primitive_type);
    layer.runtime_precision = std::move(executed.runtime_precision);
    layer.output_precisions = std::move(executed.output_precisions);
    layer.output_shapes = std::move(executed.output_shapes);
    layer.original_names = std::move(executed.original_layers);
    const bool io = layer.kind == EngineLayer::Kind::kInput || layer.kind == EngineLayer::Kind::kOutput;
    if (index && !io) {  // inputs and outputs are named after tensors, not nodes
      std::set<std::string> seen;
      for (const auto& original : layer.original_names) {
        std::string node = index->node_of(original);
        if (node.empty()) layer.openvino_ops.push_back(original);
        else if (seen.insert(node).second) layer.onnx_nodes.push_back(node);
      }
      std::sort(layer.onnx_nodes.begin(), layer.onnx_nodes.end(), [&](const auto& a, const auto& b) {
        return index->position(a) < index->position(b);
      });
      auto& bucket = layer.kind == EngineLayer::Kind::kConstant ? in_constants : in_executed;
      bucket.insert(layer.onnx_nodes.begin(), layer.onnx_nodes.end());
    }
    report.layers.push_back(std::move(layer));
  }
  if (index) {
    const auto& nodes = index->nodes();
    std::vector<long> layer_of(nodes.size(), -1);  // the executed layer naming each node
    for (std::size_t l = 0; l < report.layers.size(); ++l)
      if (is_executed(report.layers[l]))
        for (const auto& node : report.layers[l].onnx_nodes) layer_of[index->position(node)] = static_cast<long>(l);
    attribute_by_dataflow(*index, in_constants, layer_of, report.layers);
    report.onnx_compute_nodes = nodes.size();
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      if (layer_of[n] >= 0) {
        report.covered_nodes.push_back(nodes[n]);
        report.dataflow_covered += !in_executed.count(nodes[n]);
      } else if (in_constants.count(nodes[n])) {
        report.folded_nodes.push_back(nodes[n]);
      } else {
        report.removed_nodes.push_back(nodes[n]);
      }
    }
  }
  return report;
}

}  // namespace parity::runtime
