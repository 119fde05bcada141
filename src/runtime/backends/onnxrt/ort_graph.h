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
  std::vector<int> order;                          // node indices, topological (model order among ready nodes)
  std::vector<std::vector<std::string>> reads;     // per node index: inputs, then outer names its subgraphs read
  std::vector<Produced> produced;                  // every node output, in execution order
  std::vector<std::vector<std::size_t>> produced_by_position;  // per position in `order`: indices into `produced`
  std::unordered_map<std::string, std::size_t> produced_index;  // name -> index into `produced`
  std::unordered_map<std::string, int> initializer_index;       // name -> index into graph.initializer()
  std::unordered_map<std::string, int> sparse_initializer_index;
  std::unordered_map<std::string, int> input_index;             // graph inputs that are not initializers
  std::vector<std::string> outputs;                             // graph outputs, in order
  std::vector<std::string> node_names, op_types;                // per node index
};

// Throws InvalidInputError for a cycle or a tensor produced twice.
GraphAnalysis analyse_graph(const ::onnx::GraphProto& graph);

// The value types the model declares or shape inference found (inputs, outputs, value_info).
std::unordered_map<std::string, const ::onnx::TypeProto*> declared_types(const ::onnx::GraphProto& graph);

// A model holding only the nodes at positions [begin, end) of `analysis.order`, the initializers
// they read, every other tensor they read as a graph input (typed by `input_type`, which may
// return nullptr for "unknown"), and `outputs` as graph outputs (typed with the element type in
// `types` when known). Model-level fields (opsets, IR version, functions, metadata) are kept.
::onnx::ModelProto build_submodel(const ::onnx::ModelProto& model, const GraphAnalysis& analysis, std::size_t begin,
                                  std::size_t end, const std::vector<std::string>& outputs,
                                  const std::unordered_map<std::string, const ::onnx::TypeProto*>& types,
                                  const std::function<const ::onnx::TypeProto*(const std::string&)>& input_type);

// Names the nodes at positions [begin, end) read that they do not produce themselves, in first-read
// order, initializers excluded.
std::vector<std::string> external_reads(const GraphAnalysis& analysis, std::size_t begin, std::size_t end);

}  // namespace parity::runtime::onnxrt
