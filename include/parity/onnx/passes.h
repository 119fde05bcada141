// Graph passes that need no evaluation (ONNX-GraphSurgeon's cleanup/toposort and Polygraphy's
// surgeon tools): dead-code removal, topological sort, Constant-node lowering, input-shape
// overrides, subgraph extraction, single-node insertion. float32 -> float16/bfloat16 conversion:
// parity/onnx/reduced_precision.h.
// Passes that evaluate tensors (constant folding, lint) live in parity/runtime/passes/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "parity/core/tensor_metadata.h"
#include "parity/onnx/model.h"

namespace parity::onnx {

// What nodes read (outer_references, node_reads) and the order they run in: parity/onnx/graph_order.h.

// "node 'name' (Op)" or "node <unnamed> (Op)", for messages.
std::string describe_node(const ::onnx::NodeProto& node);

// Total node count of a graph and its subgraphs.
int64_t count_nodes(const ::onnx::GraphProto& graph);

struct CleanupOptions {
  bool remove_unused_graph_inputs = false;
  bool recurse_subgraphs = true;
};
struct CleanupReport {
  int64_t nodes_removed = 0;
  int64_t initializers_removed = 0;
  int64_t inputs_removed = 0;
};
// Removes nodes none of whose outputs reach a graph output, then initializers, value_info and
// (optionally) graph inputs nothing reads. Subgraph reads of outer values count as reads.
CleanupReport cleanup(::onnx::GraphProto& graph, const CleanupOptions& options = {});

// Reorders nodes topologically (stable: keeps the model's order where it can). Throws
// InvalidInputError naming a node on a cycle. Recurses into subgraphs. Built on topological_order.
void toposort(::onnx::GraphProto& graph);

// Whether `node` is ONNX's Constant (domain "" or "ai.onnx"): a value, not a computation.
bool is_constant_node(const ::onnx::NodeProto& node);

// Replaces Constant nodes by initializers (value, value_float(s), value_int(s), value_string(s));
// sparse constants are left as nodes. Recurses into subgraphs. Returns how many were lowered.
// `on_lowered`, when given, sees each lowered node before it goes (its output names the initializer).
int64_t lower_constant_nodes(::onnx::GraphProto& graph,
                             const std::function<void(const ::onnx::NodeProto&)>& on_lowered = {});

// --override-input-shapes: sets the shapes of graph inputs (a negative dim or symbol keeps it
// dynamic). Throws InvalidInputError naming an input the graph does not have.
void override_input_shapes(::onnx::GraphProto& graph, const TensorMetadata& shapes);

// Removes value_info entries (stale after a pass), recursively.
void clear_value_info(::onnx::GraphProto& graph);

// Static shape and dtype of every value shape inference or the graph declares (inputs,
// outputs, value_info, initializers), for the main graph.
std::map<std::string, TensorInfo> known_value_infos(const ::onnx::GraphProto& graph);

// --- surgeon extract ---
struct ExtractTensor {
  std::string name;
  std::optional<DType> dtype;                  // nullopt: auto
  std::optional<std::vector<Dim>> shape;       // nullopt: auto
};
// Cuts the main graph to the nodes computing `outputs` from `inputs` (and constants). Every
// tensor named must exist; every dtype/shape must be resolved (no auto left). Throws
// InvalidInputError naming the tensor when a name does not exist, when an output needs a graph
// input that is not among `inputs`, or when an output depends on none of `inputs`.
void extract_subgraph(::onnx::ModelProto& model, const std::vector<ExtractTensor>& inputs,
                      const std::vector<ExtractTensor>& outputs);

// Cuts the main graph at tensors that nodes compute, making each a graph input (appended in the
// order given, with the dtype the model or shape inference gives it and no shape), as Polygraphy's
// sanitize --override-input-shapes does for a name that is no graph input: its producer no longer
// outputs it (the output slot is left empty), and cleanup removes the nodes no graph output needs
// any more (graph inputs are kept). Throws InvalidInputError naming a tensor that no node computes
// or whose dtype is unknown.
void make_graph_inputs(::onnx::GraphProto& graph, const std::vector<std::string>& names);

// --- surgeon insert ---
// Parses Polygraphy's --attrs value syntax: a decimal point or exponent means float, quotes
// mean string, [a,b] a list, else int, else a bare string. Throws InvalidInputError on
// malformed text (unbalanced brackets or quotes, mixed list element types).
::onnx::AttributeProto parse_attribute(const std::string& name, const std::string& text);

struct InsertNodeOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string op;
  std::string name;
  std::string domain;
  std::vector<::onnx::AttributeProto> attributes;
};
// Inserts one node reading `inputs` and producing `outputs`, replacing whatever produced those
// outputs (the subgraph between them is removed by cleanup). An output that is also an input
// gets a new tensor for the node's output, and the old consumers read the new one.
void insert_node(::onnx::ModelProto& model, const InsertNodeOptions& options);

}  // namespace parity::onnx
