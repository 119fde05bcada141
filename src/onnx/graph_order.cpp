#include "parity/onnx/graph_order.h"

#include <cstddef>
#include <queue>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"

namespace parity::onnx {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

std::set<std::string> outer_references(const GraphProto& graph) {
  std::unordered_set<std::string> defined;
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (const auto& tensor : graph.initializer()) defined.insert(tensor.name());
  for (const auto& sparse : graph.sparse_initializer()) defined.insert(sparse.values().name());
  for (const auto& node : graph.node())
    for (const auto& output : node.output()) defined.insert(output);
  std::set<std::string> references;
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) references.insert(name);
  };
  for (const auto& node : graph.node())
    for (const auto& name : node_reads(node)) use(name);
  for (const auto& output : graph.output()) use(output.name());
  return references;
}

std::set<std::string> subgraph_outer_references(const NodeProto& node) {
  std::set<std::string> references;
  for (const auto& attribute : node.attribute()) {
    if (attribute.has_g()) references.merge(outer_references(attribute.g()));
    for (const auto& graph : attribute.graphs()) references.merge(outer_references(graph));
  }
  return references;
}

std::vector<std::string> node_reads(const NodeProto& node) {
  std::vector<std::string> reads;
  for (const auto& input : node.input())
    if (!input.empty()) reads.push_back(input);
  std::set<std::string> implicit = subgraph_outer_references(node);
  reads.insert(reads.end(), implicit.begin(), implicit.end());
  return reads;
}

std::unordered_map<std::string, int> unique_producers(const GraphProto& graph, const NodeDescriber& describe_node) {
  std::unordered_map<std::string, int> producers;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& output : graph.node(i).output()) {
      if (output.empty()) continue;
      if (auto [it, inserted] = producers.emplace(output, i); !inserted)
        raise<InvalidInputError>("tensor '{}' is produced by two nodes: {} and {}", output, describe_node(it->second),
                                 describe_node(i));
    }
  return producers;
}

std::vector<int> topological_order(const GraphProto& graph, const std::vector<std::vector<std::string>>& reads,
                                   const std::unordered_map<std::string, int>& producers,
                                   const CycleWording& wording) {
  const int n = graph.node_size();
  if (static_cast<int>(reads.size()) != n)
    raise<InternalError>("topological_order: {} read lists for the {} nodes of graph '{}'", reads.size(), n,
                         graph.name());
  std::vector<std::vector<int>> consumers(static_cast<std::size_t>(n));
  std::vector<int> pending(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    std::set<int> dependencies;
    for (const auto& name : reads[static_cast<std::size_t>(i)])
      if (auto it = producers.find(name); it != producers.end()) dependencies.insert(it->second);
    if (dependencies.count(i)) {
      if (wording.name_graph_when_node_reads_itself)
        raise<InvalidInputError>("{} reads its own output: the graph '{}' has a cycle", wording.describe_node(i),
                                 graph.name());
      raise<InvalidInputError>("{} reads its own output: the graph has a cycle", wording.describe_node(i));
    }
    for (int d : dependencies) consumers[static_cast<std::size_t>(d)].push_back(i);
    pending[static_cast<std::size_t>(i)] = static_cast<int>(dependencies.size());
  }
  // Kahn's algorithm; the smallest ready index first keeps the model's own order among ready nodes.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<std::size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[static_cast<std::size_t>(i)])
      if (--pending[static_cast<std::size_t>(c)] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) != n)
    for (int i = 0; i < n; ++i)
      if (pending[static_cast<std::size_t>(i)] > 0)
        raise<InvalidInputError>("the graph '{}' has a cycle: {} depends (directly or not) on its own output",
                                 graph.name(), wording.describe_node(i));
  return order;
}

std::vector<int> topological_order(const GraphProto& graph) {
  std::vector<std::vector<std::string>> reads;
  for (const auto& node : graph.node()) reads.push_back(node_reads(node));
  auto describe = [&](int index) {
    const auto& node = graph.node(index);
    return fmt::format("node '{}' ({})", node.name(), node.op_type());
  };
  return topological_order(graph, reads, unique_producers(graph, describe), CycleWording{describe});
}

}  // namespace parity::onnx
