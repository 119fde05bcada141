// What the nodes of a graph read and the order they can run in: the one answer the reference
// interpreter, the ONNX Runtime graph cutter and the graph passes (toposort, cleanup, extract,
// folding) share, so every runner lists tensors in the same order.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

// Names a graph reads from enclosing scopes (an If/Loop/Scan body sees the values of the graphs
// around it), recursively through its own subgraphs: every name its nodes read (their inputs and
// their subgraphs' outer references) or it outputs that is not one of its own inputs, initializers
// (dense or sparse) or node outputs. Empty names (omitted optional inputs) are not references.
std::set<std::string> outer_references(const ::onnx::GraphProto& graph);

// The outer references of all of a node's subgraph attributes together: what an If/Loop/Scan reads
// implicitly from the graph it is in. Empty for a node without subgraphs.
std::set<std::string> subgraph_outer_references(const ::onnx::NodeProto& node);

// Every value a node reads: its non-empty inputs in order (repeats kept), then
// subgraph_outer_references(node) in name order.
std::vector<std::string> node_reads(const ::onnx::NodeProto& node);

// Names node `index` of the graph at hand in error messages ("node 'conv1' (Conv)").
using NodeDescriber = std::function<std::string(int index)>;

// Tensor name -> index of the node producing it (empty output names skipped). Throws
// InvalidInputError "tensor 't' is produced by two nodes: A and B" for a tensor produced twice.
std::unordered_map<std::string, int> unique_producers(const ::onnx::GraphProto& graph,
                                                      const NodeDescriber& describe_node);

// How topological_order words a cycle, so each caller keeps the messages its users know.
struct CycleWording {
  NodeDescriber describe_node;
  // For a node reading its own output: "A reads its own output: the graph 'g' has a cycle" when
  // true, "A reads its own output: the graph has a cycle" when false.
  bool name_graph_when_node_reads_itself = false;
};

// Node indices of `graph` in topological order; among the nodes ready to run, the one earliest in
// the model comes first (an already sorted graph keeps its order). `reads[i]` is what node i reads
// (node_reads); `producers` maps a tensor to the node producing it (unique_producers, or any map
// where a tensor produced twice names one of its producers); names in neither (graph inputs,
// initializers, outer values) impose no order. Throws InvalidInputError naming a node for a cycle:
// the first node (in model order) reading its own output, else the first node left waiting by a
// cycle ("the graph 'g' has a cycle: A depends (directly or not) on its own output").
std::vector<int> topological_order(const ::onnx::GraphProto& graph,
                                   const std::vector<std::vector<std::string>>& reads,
                                   const std::unordered_map<std::string, int>& producers,
                                   const CycleWording& wording);

// The same for the whole graph with node_reads, unique_producers and nodes named
// "node 'conv1' (Conv)" in errors.
std::vector<int> topological_order(const ::onnx::GraphProto& graph);

}  // namespace parity::onnx
