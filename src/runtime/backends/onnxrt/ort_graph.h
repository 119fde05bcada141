// Graph surgery for intermediate outputs: the main graph's execution order and what each node
// reads, and sub-models of a range of nodes whose graph outputs are any tensors we want (every
// tensor of the range when marking layerwise). Private to the onnxrt backend.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

namespace parity::runtime::onnxrt {

// The main graph of a model, analysed once (names only; no tensor data).
struct GraphAnalysis {
  struct Produced {
    std::string name;
    int node = 0;  // index into graph.node()
  };
  // Node indices in topological order (the model's own order among ready nodes).
  std::vector<int> order;
  // Per node index: its inputs, then the outer names its subgraphs read.
  std::vector<std::vector<std::string>> reads;
  // Every node output, in execution order.
  std::vector<Produced> produced;
  // Per position in `order`: indices into `produced`.
  std::vector<std::vector<std::size_t>> produced_by_position;
  std::unordered_map<std::string, std::size_t> produced_index;  // name -> index into `produced`
  std::unordered_map<std::string, int> initializer_index;  // name -> index into graph.initializer()
  std::unordered_map<std::string, int> sparse_initializer_index;
  std::unordered_map<std::string, int> input_index;  // graph inputs that are not initializers
  // Initializers a feed may override (IR >= 4 lists them among the graph inputs too): ONNX Runtime
  // treats them as variables, not constants.
  std::unordered_map<std::string, int> overridable_index;  // name -> index into graph.input()
  std::vector<std::string> outputs;                        // graph outputs, in order
  std::vector<std::string> node_names, op_types;           // per node index
  // Per node index: true when the node depends only on constant initializers and deterministic
  // nodes, so ONNX Runtime folds it into a constant. A piece that reads such a node's output gets
  // the node itself (and its constant ancestors) rather than an input: the value stays a constant
  // for ONNX Runtime (prepacked weights, fusions), as in the one-piece run.
  std::vector<bool> constant;
  std::vector<std::size_t> position;  // per node index: its position in `order`
};

// Throws InvalidInputError for a cycle or a tensor produced twice.
GraphAnalysis analyse_graph(const ::onnx::GraphProto& graph, int64_t ir_version);

// The value types the model declares or shape inference found (inputs, outputs, value_info).
std::unordered_map<std::string, const ::onnx::TypeProto*> declared_types(
    const ::onnx::GraphProto& graph);

// A model holding the nodes at positions [begin, end) of `analysis.order` (plus the constant
// nodes before `begin` whose outputs they read, see GraphAnalysis::constant), the initializers
// they read, every other tensor they read as a graph input (typed by `input_type`, which may return
// nullptr for "unknown"), and `outputs` as graph outputs (typed with the element type in `types`
// when known). Model-level fields (opsets, IR version, functions, metadata) are kept.
::onnx::ModelProto build_submodel(
    const ::onnx::ModelProto& model, const GraphAnalysis& analysis, std::size_t begin,
    std::size_t end, const std::vector<std::string>& outputs,
    const std::unordered_map<std::string, const ::onnx::TypeProto*>& types,
    const std::function<const ::onnx::TypeProto*(const std::string&)>& input_type);

// The tensors a piece [begin, end) reads as graph inputs: what build_submodel makes inputs, in the
// same order, before any output that is not produced inside.
std::vector<std::string> piece_inputs(const GraphAnalysis& analysis, std::size_t begin,
                                      std::size_t end);

}  // namespace parity::runtime::onnxrt
