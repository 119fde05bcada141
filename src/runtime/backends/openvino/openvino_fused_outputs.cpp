// The tensors of the compiled plain model's layers, for `--ov-outputs mark fused`
// (parity/runtime/openvino/openvino_fused_outputs.h).
#include "parity/runtime/openvino/openvino_fused_outputs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "openvino_backend.h"

namespace parity::runtime {
namespace {

bool is_compute(const std::string& layer_type) {
  static const std::set<std::string> not_compute = {"Input", "Parameter", "Output", "Result",
                                                    "Const", "Constant",  "Reorder"};
  return !layer_type.empty() && !not_compute.count(layer_type);
}

// A node's identifier as the engine report gives it: its name, else its first output.
std::string node_id(const ::onnx::NodeProto& node) {
  return !node.name().empty() ? node.name() : node.output_size() ? node.output(0) : "";
}

// A name with its digits dropped ("Multiply_3695" -> "Multiply_").
std::string without_digits(const std::string& name) {
  std::string result;
  for (char c : name)
    if (c < '0' || c > '9') result += c;
  return result;
}

}  // namespace

std::string FusedLayerOutput::description() const {
  return fmt::format("layer '{}' [{} | {} | {}] covering ONNX node{} {}", layer, layer_type, kernel, precision,
                     onnx_nodes.size() == 1 ? "" : "s", fmt::join(onnx_nodes, ", "));
}

std::vector<FusedLayerOutput> fused_layer_outputs(const EngineReport& report, const onnx::Model& model) {
  // Which layer each ONNX node belongs to, in three passes: (1) a layer naming the node exactly (its
  // name or an output's among originalLayersNames; the last such layer, as a node OpenVINO splits is
  // finished by the later one); (2) the layer every consumer of a node not owned yet belongs to (the
  // node was fused into it; OpenVINO does not always name what it fuses: a MatMul fused with its Add
  // into a FullyConnected is named only by the Add); (3) the report's mapping otherwise (a name with
  // a "/suffix", attributed by dataflow). Pass 2 keeps "matmul/transpose_b", the transposed
  // weights, from owning "matmul", which would mark a tensor inside the FullyConnected.
  std::unordered_map<std::string, const ::onnx::NodeProto*> node_of;
  for (const auto& node : model->graph().node()) node_of.emplace(node_id(node), &node);
  std::unordered_map<std::string, std::size_t> layer_of;
  for (std::size_t l = 0; l < report.layers.size(); ++l) {
    const EngineLayer& layer = report.layers[l];
    if (layer.kind != EngineLayer::Kind::kCompute) continue;
    std::set<std::string> names(layer.original_names.begin(), layer.original_names.end());
    for (const auto& id : layer.onnx_nodes) {
      const ::onnx::NodeProto& node = *node_of.at(id);
      bool exact = names.count(node.name()) > 0;
      for (const auto& output : node.output()) exact = exact || names.count(output) > 0;
      if (exact) layer_of[id] = l;
    }
  }
  std::set<std::string> graph_output_names;
  for (const auto& output : model->graph().output()) graph_output_names.insert(output.name());
  std::unordered_map<std::string, std::vector<std::string>> consumers;  // tensor -> reading node ids
  for (const auto& node : model->graph().node())
    for (const auto& input : node.input())
      if (!input.empty()) consumers[input].push_back(node_id(node));
  for (bool changed = true; changed;) {
    changed = false;
    for (auto node = model->graph().node().rbegin(); node != model->graph().node().rend(); ++node) {
      std::string id = node_id(*node);
      if (layer_of.count(id) || !node_of.count(id)) continue;
      std::optional<std::size_t> layer;
      bool single = true, any = false;
      for (const auto& output : node->output()) {
        if (output.empty()) continue;
        if (graph_output_names.count(output)) single = false;
        for (const auto& consumer : consumers[output]) {
          auto owner = layer_of.find(consumer);
          if (owner == layer_of.end() || (layer && *layer != owner->second)) single = false;
          else layer = owner->second;
          any = true;
        }
      }
      if (!single || !any || !layer) continue;
      // Only where the report puts the node in an executed layer (not folded into constants).
      bool executed = false;
      for (const auto& entry : report.covered_nodes) executed = executed || entry == id;
      if (!executed) continue;
      layer_of[id] = *layer;
      changed = true;
    }
  }
  for (std::size_t l = 0; l < report.layers.size(); ++l) {
    const EngineLayer& layer = report.layers[l];
    if (layer.kind != EngineLayer::Kind::kCompute) continue;
    for (const auto& node : layer.onnx_nodes) layer_of.emplace(node, l);
    for (const auto& node : layer.dataflow_nodes) layer_of.emplace(node, l);
  }
  std::set<std::string> graph_outputs;
  for (const auto& output : model->graph().output()) graph_outputs.insert(output.name());
  // Tensor -> the layer of its producer; tensor -> the layers of its readers (SIZE_MAX: a node of no layer).
  std::unordered_map<std::string, std::size_t> producer_layer;
  std::unordered_map<std::string, std::set<std::size_t>> reader_layers;
  std::map<std::size_t, std::vector<std::string>> outputs_in_order, inputs_of;
  for (const auto& node : model->graph().node()) {
    auto owner = layer_of.find(node_id(node));
    std::size_t layer = owner == layer_of.end() ? SIZE_MAX : owner->second;
    for (const auto& input : node.input())
      if (!input.empty()) reader_layers[input].insert(layer);
    if (layer == SIZE_MAX) continue;
    for (const auto& output : node.output())
      if (!output.empty()) producer_layer.emplace(output, layer);
  }
  for (const auto& node : model->graph().node()) {
    auto owner = layer_of.find(node_id(node));
    if (owner == layer_of.end()) continue;
    std::size_t layer = owner->second;
    for (const auto& output : node.output()) {
      if (output.empty()) continue;
      const auto& readers = reader_layers[output];
      bool leaves = graph_outputs.count(output) ||
                    std::any_of(readers.begin(), readers.end(), [&](std::size_t reader) { return reader != layer; });
      if (leaves) outputs_in_order[layer].push_back(output);
    }
    for (const auto& input : node.input()) {
      auto producer = producer_layer.find(input);
      if (producer == producer_layer.end() || producer->second == layer) continue;
      auto& inputs = inputs_of[layer];
      if (std::find(inputs.begin(), inputs.end(), input) == inputs.end()) inputs.push_back(input);
    }
  }
  std::unordered_map<std::string, std::size_t> position;  // ONNX node -> graph order
  for (const auto& node : model->graph().node()) position.emplace(node_id(node), position.size());
  std::vector<FusedLayerOutput> result;
  for (const auto& [l, tensors] : outputs_in_order) {
    const EngineLayer& layer = report.layers[l];
    FusedLayerOutput base;
    base.layer = layer.name;
    base.layer_type = layer.layer_type;
    base.kernel = layer.kernel;
    base.precision = layer.runtime_precision;
    base.output_precision = layer.output_precisions.substr(0, layer.output_precisions.find(','));
    for (const auto& [node, owner] : layer_of)
      if (owner == l) base.onnx_nodes.push_back(node);
    std::stable_sort(base.onnx_nodes.begin(), base.onnx_nodes.end(),
                     [&](const std::string& a, const std::string& b) { return position[a] < position[b]; });
    base.inputs = inputs_of[l];
    for (const auto& tensor : tensors) {
      FusedLayerOutput output = base;
      output.tensor = tensor;
      result.push_back(std::move(output));
    }
  }
  return result;
}

std::vector<ChangedLayer> changed_layers(const std::vector<openvino::ExecutedLayer>& plain,
                                         const std::vector<openvino::ExecutedLayer>& marked) {
  auto compute = [](const std::vector<openvino::ExecutedLayer>& layers) {
    std::vector<const openvino::ExecutedLayer*> result;
    for (const auto& layer : layers)
      if (is_compute(layer.layer_type)) result.push_back(&layer);
    return result;
  };
  const auto before = compute(plain), after = compute(marked);
  // Plain layer -> marked layer: by name first (the exporters number the ONNX nodes of repeated
  // blocks, "node_matmul_1" and "node_matmul_3", so digits matter); then each plain layer left
  // (OpenVINO renumbered it) takes the first marked layer left whose name differs only in its
  // digits, between the marked layers its matched neighbours took.
  constexpr std::size_t kNone = SIZE_MAX;
  std::vector<std::size_t> match(before.size(), kNone);
  std::vector<bool> taken(after.size(), false);
  std::unordered_map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t m = after.size(); m-- > 0;) by_name[after[m]->name].push_back(m);
  for (std::size_t p = 0; p < before.size(); ++p) {
    auto it = by_name.find(before[p]->name);
    if (it == by_name.end() || it->second.empty()) continue;
    match[p] = it->second.back();
    it->second.pop_back();
    taken[match[p]] = true;
  }
  for (std::size_t p = 0; p < before.size(); ++p) {
    if (match[p] != kNone) continue;
    std::size_t low = 0, high = after.size();
    for (std::size_t q = p; q-- > 0;)
      if (match[q] != kNone) {
        low = match[q] + 1;
        break;
      }
    for (std::size_t q = p + 1; q < before.size(); ++q)
      if (match[q] != kNone) {
        high = match[q];
        break;
      }
    for (std::size_t m = low; m < high; ++m)
      if (!taken[m] && without_digits(after[m]->name) == without_digits(before[p]->name)) {
        match[p] = m;
        taken[m] = true;
        break;
      }
  }
  // A marked layer no plain layer took is an extra layer, counted against the plain layer whose
  // marked layer runs next.
  std::vector<std::size_t> plain_of(after.size(), kNone);
  for (std::size_t p = 0; p < before.size(); ++p)
    if (match[p] != kNone) plain_of[match[p]] = p;
  std::vector<std::vector<std::string>> extras(before.size());
  std::vector<ChangedLayer> only_marked;
  for (std::size_t m = 0; m < after.size(); ++m) {
    if (taken[m]) continue;
    std::size_t next = m + 1;
    while (next < after.size() && plain_of[next] == kNone) ++next;
    if (next == after.size())
      only_marked.push_back(
          {after[m]->name, fmt::format("executed in the marked model only [{}]", after[m]->layer_type), {}});
    else
      extras[plain_of[next]].push_back(
          fmt::format("the marked model executes '{}' [{}] before it", after[m]->name, after[m]->layer_type));
  }
  std::vector<ChangedLayer> changed;
  for (std::size_t p = 0; p < before.size(); ++p) {
    const openvino::ExecutedLayer& layer = *before[p];
    if (match[p] == kNone) {
      changed.push_back({layer.name, "not executed in the marked model", {}});
      continue;
    }
    std::vector<std::string> changes = std::move(extras[p]);
    const openvino::ExecutedLayer& other = *after[match[p]];
    auto check = [&](const char* what, const std::string& was, const std::string& is) {
      if (was != is) changes.push_back(fmt::format("{} {} -> {}", what, was, is));
    };
    check("type", layer.layer_type, other.layer_type);
    check("kernel", layer.primitive_type, other.primitive_type);
    check("runtime precision", layer.runtime_precision, other.runtime_precision);
    check("output precisions", layer.output_precisions, other.output_precisions);
    // The fused ops: those named alike in both, then the rest with digits ignored (renumbered ops).
    std::multiset<std::string> fused(layer.original_layers.begin(), layer.original_layers.end());
    std::multiset<std::string> fused_marked(other.original_layers.begin(), other.original_layers.end());
    for (const auto& name : other.original_layers)
      if (auto it = fused.find(name); it != fused.end()) {
        fused.erase(it);
        fused_marked.erase(fused_marked.find(name));
      }
    auto digitless = [](const std::multiset<std::string>& names) {
      std::multiset<std::string> result;
      for (const auto& name : names) result.insert(without_digits(name));
      return result;
    };
    std::vector<std::string> lost_ops;
    if (digitless(fused) != digitless(fused_marked)) {
      changes.push_back(fmt::format("fused ops {} -> {}", fmt::join(layer.original_layers, ","),
                                    fmt::join(other.original_layers, ",")));
      std::multiset<std::string> kept = digitless(fused_marked);
      for (const auto& name : fused)
        if (auto it = kept.find(without_digits(name)); it != kept.end()) kept.erase(it);
        else lost_ops.push_back(name);
    }
    if (!changes.empty())
      changed.push_back({layer.name, fmt::format("{}", fmt::join(changes, "; ")), std::move(lost_ops)});
  }
  changed.insert(changed.end(), only_marked.begin(), only_marked.end());
  return changed;
}

std::set<std::string> marks_around(const std::vector<ChangedLayer>& changed,
                                   const std::vector<FusedLayerOutput>& outputs, int hops) {
  std::set<std::string> layers;
  for (const auto& layer : changed) layers.insert(layer.layer);
  for (int hop = 0; hop < hops; ++hop) {
    std::set<std::string> tensors, reads;  // written and read by the layers so far
    for (const auto& output : outputs)
      if (layers.count(output.layer)) {
        tensors.insert(output.tensor);
        reads.insert(output.inputs.begin(), output.inputs.end());
      }
    std::set<std::string> wider = layers;
    for (const auto& output : outputs) {
      if (reads.count(output.tensor)) wider.insert(output.layer);  // a producer
      for (const auto& input : output.inputs)
        if (tensors.count(input)) wider.insert(output.layer);  // a consumer
    }
    layers = std::move(wider);
  }
  std::set<std::string> marks;
  for (const auto& output : outputs) {
    if (!layers.count(output.layer)) continue;
    marks.insert(output.tensor);
    marks.insert(output.inputs.begin(), output.inputs.end());
  }
  return marks;
}

}  // namespace parity::runtime
