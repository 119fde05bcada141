#include "parity/onnx/torch_module_pairing.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace parity::onnx {
namespace {

// One module on a node's scope stack: its index in the given modules and which call of it (0 for the
// first; TorchScript's "_1" suffix is call 1; dynamo records none).
struct ScopeLevel {
  size_t module;
  int call;
};

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string_view parent_of(std::string_view name) {
  const auto dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : name.substr(0, dot);
}

std::string_view namespace_of(const ::onnx::NodeProto& node) {
  for (const auto& property : node.metadata_props())
    if (property.key() == "namespace") return property.value();
  return {};
}

class ScopeResolver {
 public:
  explicit ScopeResolver(const std::vector<TorchModule>& modules) {
    for (size_t i = 0; i < modules.size(); ++i) index_.emplace(modules[i].name, i);
  }

  // "/m/layer1/layer1.0/relu_1/Relu": the components between the first and the last '/', each the
  // module's name relative to the innermost enclosing one or one of its ancestors; a component that
  // names no module but does once a "_<k>" suffix is dropped is that module's call k.
  std::vector<ScopeLevel> torchscript(std::string_view node_name) const {
    std::vector<ScopeLevel> levels;
    if (!node_name.starts_with('/')) return levels;
    add_root(levels);
    const auto components = split(node_name.substr(1), '/');
    std::string current;
    for (size_t c = 0; c + 1 < components.size(); ++c) {
      auto found = resolve(current, components[c]);
      int call = 0;
      if (!found) {
        const auto underscore = components[c].rfind('_');
        if (underscore != std::string_view::npos) {
          const auto digits = components[c].substr(underscore + 1);
          int k = 0;
          const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
          if (error == std::errc{} && end == digits.data() + digits.size() && !digits.empty()) {
            found = resolve(current, components[c].substr(0, underscore));
            call = k;
          }
        }
      }
      if (!found) break;  // a scope this module list does not hold: the node stays in the enclosing ones
      current = *found;
      levels.push_back({index_.at(current), call});
    }
    return levels;
  }

  // ": <class>/m: <class>/m.layer1: <class>/.../<fx node>: <target>": the segments before the last
  // are the modules by qualified name, from the top one (whose name is empty).
  std::vector<ScopeLevel> dynamo(std::string_view stack) const {
    std::vector<ScopeLevel> levels;
    if (!stack.starts_with(": ")) return levels;
    const auto segments = split(stack, '/');
    for (size_t s = 0; s + 1 < segments.size(); ++s) {
      const auto colon = segments[s].find(": ");
      if (colon == std::string_view::npos) break;
      const auto it = index_.find(std::string(segments[s].substr(0, colon)));
      if (it != index_.end()) levels.push_back({it->second, 0});
    }
    return levels;
  }

 private:
  void add_root(std::vector<ScopeLevel>& levels) const {
    if (const auto it = index_.find(""); it != index_.end()) levels.push_back({it->second, 0});
  }

  // The module `component` names under `current`: current.component, else under each ancestor of
  // current (TorchScript names a Sequential's child "layer1.0", relative to the Sequential's parent).
  std::optional<std::string> resolve(const std::string& current, std::string_view component) const {
    std::string_view base = current;
    while (true) {
      std::string candidate = base.empty() ? std::string(component) : std::string(base) + "." + std::string(component);
      if (index_.contains(candidate)) return candidate;
      if (base.empty()) return std::nullopt;
      base = parent_of(base);
    }
  }

  std::unordered_map<std::string, size_t> index_;
};

// What a tensor's value depends on: only initializers and constants, also shapes (Shape, Size), or the
// graph's inputs through data. Only data tensors can be a module's output: a constant or a shape a
// later module reuses is not.
enum class Dependence { constant, shape, data };

// Every name a node reads: its inputs and what the nodes of its subgraphs read.
void names_read(const ::onnx::NodeProto& node, std::vector<std::string>& out) {
  for (const auto& input : node.input())
    if (!input.empty()) out.push_back(input);
  for (const auto& attribute : node.attribute()) {
    auto read_graph = [&](const ::onnx::GraphProto& graph) {
      for (const auto& inner : graph.node()) names_read(inner, out);
    };
    if (attribute.has_g()) read_graph(attribute.g());
    for (const auto& graph : attribute.graphs()) read_graph(graph);
  }
}

struct GraphFacts {
  std::vector<std::vector<std::string>> reads;              // per node
  std::unordered_map<std::string, size_t> producer;         // tensor -> node
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  std::unordered_set<std::string> graph_outputs;
  std::unordered_map<std::string, Dependence> dependence;   // node outputs and graph inputs
  std::unordered_set<std::string> initializers;
};

GraphFacts graph_facts(const ::onnx::GraphProto& graph) {
  GraphFacts facts;
  for (const auto& init : graph.initializer()) facts.initializers.insert(init.name());
  for (const auto& init : graph.sparse_initializer()) facts.initializers.insert(init.values().name());
  for (const auto& input : graph.input())
    if (!facts.initializers.contains(input.name())) facts.dependence[input.name()] = Dependence::data;
  for (const auto& output : graph.output()) facts.graph_outputs.insert(output.name());
  facts.reads.resize(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    names_read(node, facts.reads[i]);
    for (const auto& name : facts.reads[i]) facts.consumers[name].push_back(i);
    Dependence dependence = Dependence::constant;
    for (const auto& name : facts.reads[i])
      if (const auto it = facts.dependence.find(name); it != facts.dependence.end())
        dependence = std::max(dependence, it->second);
    if (dependence == Dependence::data && (node.op_type() == "Shape" || node.op_type() == "Size"))
      dependence = Dependence::shape;
    for (const auto& output : node.output()) {
      if (output.empty()) continue;
      facts.producer[output] = i;
      facts.dependence[output] = dependence;
    }
  }
  return facts;
}

size_t find_root(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

// The data tensors `nodes` produce that a node outside them reads or that are graph outputs, in node
// order, with their producers.
// With `data_only` false, constants and shapes too.
std::vector<std::pair<std::string, size_t>> boundary_outputs(const ::onnx::GraphProto& graph, const GraphFacts& facts,
                                                            const std::vector<size_t>& nodes, bool data_only = true) {
  const std::unordered_set<size_t> inside(nodes.begin(), nodes.end());
  std::vector<std::pair<std::string, size_t>> out;
  for (size_t n : nodes)
    for (const auto& output : graph.node(static_cast<int>(n)).output()) {
      if (output.empty() || (data_only && facts.dependence.at(output) != Dependence::data)) continue;
      bool leaves = facts.graph_outputs.contains(output);
      if (const auto it = facts.consumers.find(output); !leaves && it != facts.consumers.end())
        leaves = std::any_of(it->second.begin(), it->second.end(), [&](size_t c) { return !inside.contains(c); });
      if (leaves) out.emplace_back(output, n);
    }
  return out;
}

// `nodes` split into the groups that data tensors connect (dynamo's calls of one module), each
// in node order, groups ordered by their first node.
std::vector<std::vector<size_t>> connected_groups(const GraphFacts& facts, const std::vector<size_t>& nodes) {
  std::unordered_map<size_t, size_t> position;
  for (size_t p = 0; p < nodes.size(); ++p) position.emplace(nodes[p], p);
  std::vector<size_t> parent(nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t p = 0; p < nodes.size(); ++p)
    for (const auto& name : facts.reads[nodes[p]]) {
      const auto producer = facts.producer.find(name);
      if (producer == facts.producer.end()) continue;
      const auto q = position.find(producer->second);
      if (q == position.end() || facts.dependence.at(name) == Dependence::constant) continue;
      parent[find_root(parent, p)] = find_root(parent, q->second);
    }
  std::vector<std::vector<size_t>> groups;
  std::unordered_map<size_t, size_t> group_of_root;
  for (size_t p = 0; p < nodes.size(); ++p) {
    const size_t root = find_root(parent, p);
    auto [it, added] = group_of_root.emplace(root, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(nodes[p]);
  }
  return groups;
}

std::string quoted_list(const std::vector<std::pair<std::string, size_t>>& tensors) {
  std::string text;
  for (size_t i = 0; i < tensors.size() && i < 4; ++i) text += (i ? ", '" : "'") + tensors[i].first + "'";
  if (tensors.size() > 4) text += ", ...";
  return text;
}

std::string module_label(const TorchModule& module) {
  return (module.name.empty() ? std::string("the top module") : module.name) + ": " + module.class_name;
}

size_t depth(const std::string& module) {
  return module.empty() ? 0 : 1 + static_cast<size_t>(std::count(module.begin(), module.end(), '.'));
}

}  // namespace

std::vector<const TorchModulePairing*> TorchModulePairings::tensors() const {
  std::vector<const TorchModulePairing*> out;
  std::unordered_map<std::string, size_t> position;
  for (const auto& pairing : modules) {
    if (!pairing.paired()) continue;
    const auto [it, added] = position.emplace(pairing.tensor, out.size());
    if (added) out.push_back(&pairing);
    else if (depth(pairing.module) > depth(out[it->second]->module)) out[it->second] = &pairing;
  }
  return out;
}

bool TorchModulePairings::unpair(const std::string& module, std::string reason) {
  for (auto& pairing : modules)
    if (pairing.module == module && pairing.paired()) {
      pairing.tensor.clear();
      pairing.node.clear();
      pairing.reason = std::move(reason);
      return true;
    }
  return false;
}

const char* torch_exporter_label(TorchExporter exporter) {
  switch (exporter) {
    case TorchExporter::torchscript: return "TorchScript (dynamo=False)";
    case TorchExporter::dynamo: return "dynamo (dynamo=True)";
    case TorchExporter::by_name: return "no ONNX model: by qualified name";
    case TorchExporter::none: break;
  }
  return "no PyTorch exporter recognised";
}

TorchExporter detect_torch_exporter(const ::onnx::GraphProto& graph) {
  bool scope_paths = false;
  for (const auto& node : graph.node()) {
    if (!namespace_of(node).empty()) return TorchExporter::dynamo;
    if (node.name().starts_with('/')) scope_paths = true;
  }
  return scope_paths ? TorchExporter::torchscript : TorchExporter::none;
}

TorchModulePairings pair_torch_modules_by_name(const std::vector<TorchModule>& modules) {
  TorchModulePairings result;
  result.exporter = TorchExporter::by_name;
  for (const auto& module : modules) {
    if (module.name.empty()) result.modules.push_back({"", module.class_name, {}, {}, "the top module: its outputs are the runner's outputs"});
    else result.modules.push_back({module.name, module.class_name, module.name, {}, {}});
  }
  return result;
}

TorchModulePairings pair_torch_modules(const ::onnx::GraphProto& graph, const std::vector<TorchModule>& modules) {
  TorchModulePairings result;
  result.exporter = detect_torch_exporter(graph);
  result.modules.reserve(modules.size());
  for (const auto& module : modules) result.modules.push_back({module.name, module.class_name, {}, {}, {}});
  if (result.exporter == TorchExporter::none) {
    for (auto& pairing : result.modules)
      pairing.reason = "the model records no module scopes (neither TorchScript node names nor dynamo 'namespace' metadata)";
    return result;
  }

  const GraphFacts facts = graph_facts(graph);
  const ScopeResolver resolver(modules);
  // Per module: its nodes by call key (the call indices of the stack down to the module).
  std::vector<std::map<std::vector<int>, std::vector<size_t>>> calls(modules.size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    const auto levels = result.exporter == TorchExporter::dynamo ? resolver.dynamo(namespace_of(node))
                                                                 : resolver.torchscript(node.name());
    std::vector<int> key;
    for (const auto& level : levels) {
      key.push_back(level.call);
      calls[level.module][key].push_back(static_cast<size_t>(i));
    }
  }

  // Which module's scope holds each node: the innermost one, for naming where a parameter went.
  auto innermost_module = [&](size_t node) -> std::optional<size_t> {
    const auto& n = graph.node(static_cast<int>(node));
    const auto levels = result.exporter == TorchExporter::dynamo ? resolver.dynamo(namespace_of(n))
                                                                 : resolver.torchscript(n.name());
    if (levels.empty()) return std::nullopt;
    return levels.back().module;
  };
  bool batch_norm_without_node = false;
  for (size_t m = 0; m < modules.size(); ++m)
    if (calls[m].empty() && modules[m].class_name.starts_with("BatchNorm")) batch_norm_without_node = true;

  for (size_t m = 0; m < modules.size(); ++m) {
    auto& pairing = result.modules[m];
    const auto& module = modules[m];
    if (calls[m].empty()) {
      // Its parameters read by another module's node: the exporter fused it into that node (dynamo
      // folds Conv2d into the following BatchNorm's Conv, under the BatchNorm's scope).
      const std::string prefix = module.name.empty() ? std::string() : module.name + ".";
      for (const auto& initializer : graph.initializer()) {
        const std::string& init = initializer.name();
        if (module.name.empty() || !init.starts_with(prefix) || init.find('.', prefix.size()) != std::string::npos) continue;
        const auto consumers = facts.consumers.find(init);
        if (consumers == facts.consumers.end()) continue;
        const size_t node = consumers->second.front();
        const auto owner = innermost_module(node);
        pairing.reason = "fused away: no node of its own; its parameter '" + init + "' is read by node '" +
                         graph.node(static_cast<int>(node)).name() + "'" +
                         (owner ? " of " + module_label(modules[*owner]) + ", whose output is that module's" : "");
        break;
      }
      if (!pairing.reason.empty()) continue;
      if (result.exporter == TorchExporter::torchscript && module.class_name.starts_with("BatchNorm"))
        pairing.reason = "fused away: the TorchScript exporter folds an eval-mode BatchNorm into the preceding "
                         "convolution's weights, and the node names do not say which";
      else
        pairing.reason = "its scope has no node (its output is its input, as for nn.Identity or Dropout in eval "
                         "mode, it was never called, or its operations were inlined into another module's)";
      continue;
    }

    std::vector<std::vector<size_t>> groups;
    for (const auto& [key, nodes] : calls[m]) {
      if (result.exporter == TorchExporter::dynamo) {
        for (auto& group : connected_groups(facts, nodes))
          if (!boundary_outputs(graph, facts, group).empty()) groups.push_back(std::move(group));
      } else {
        groups.push_back(nodes);
      }
    }
    if (groups.size() > 1) {
      pairing.reason = result.exporter == TorchExporter::torchscript
                           ? "called " + std::to_string(groups.size()) + " times (one scope per call)"
                           : std::to_string(groups.size()) +
                                 " unconnected groups of nodes each give an output (the module is called " +
                                 std::to_string(groups.size()) + " times, or returns several tensors)";
      continue;
    }
    const auto outputs = groups.empty() ? std::vector<std::pair<std::string, size_t>>{}
                                        : boundary_outputs(graph, facts, groups.front());
    if (outputs.empty()) {
      std::vector<size_t> all;
      for (const auto& [key, nodes] : calls[m]) all.insert(all.end(), nodes.begin(), nodes.end());
      pairing.reason = boundary_outputs(graph, facts, all, false).empty()
                           ? "nothing its nodes compute is read outside it"
                           : "its output depends on weights and shapes only, not on the inputs' values (a backend "
                             "may fold it into a constant)";
      continue;
    }
    if (outputs.size() > 1) {
      pairing.reason = "its nodes give " + std::to_string(outputs.size()) + " tensors read outside it (" +
                       quoted_list(outputs) + "): it returns several tensors, or another module reads one of its "
                       "intermediates";
      continue;
    }
    const auto& [tensor, node_index] = outputs.front();
    const auto& node = graph.node(static_cast<int>(node_index));
    // TorchScript's eval-mode export folds a BatchNorm into the convolution before it: that Conv node
    // sits in the convolution module's scope but computes the BatchNorm's output, with new weights (a
    // module enclosing both, such as a Sequential(Conv2d, BatchNorm2d), does output it).
    if (result.exporter == TorchExporter::torchscript && batch_norm_without_node &&
        module.class_name.starts_with("Conv") && node.op_type() == "Conv" &&
        node.input_size() > 1 && node.input(1) != module.name + ".weight") {
      pairing.reason = "its Conv node '" + node.name() + "' has a BatchNorm folded into it (weight '" + node.input(1) +
                       "' instead of '" + module.name + ".weight'): its output is the BatchNorm's, not this module's";
      continue;
    }
    pairing.tensor = tensor;
    pairing.node = node.name();
  }
  return result;
}

}  // namespace parity::onnx
