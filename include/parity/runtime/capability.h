// Which parts of a model a backend can run (Polygraphy's `inspect capability`): the main graph's
// nodes are split, in topological order, into maximal ranges the backend converts and runs
// ("supported") and the ranges between them ("unsupported"), each with the backend's reasons.
// The backend is asked through a SupportQuery (OpenVINO's:
// parity/runtime/openvino/openvino_support_query.h).
//
// How: the whole model is asked first. A backend that converts a model answers per op (OpenVINO's
// query_model); one that refuses it is asked about parts: the range is halved until single nodes
// are left, and neighbouring supported ranges are joined again where the backend converts them
// together (a node may convert alone but not in its context, e.g. a Conv whose input rank only
// becomes unknown inside an If). A control-flow node (If, Loop, Scan) runs on one backend as a
// whole; when it is unsupported, the nodes of its bodies the backend's message blames are listed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parity/core/dtype.h"
#include "parity/onnx/model.h"

namespace parity::runtime {

// A backend's answer about one model.
struct SupportAnswer {
  bool converted = true;
  std::string reason;  // when not converted: the backend's reason, shortened for a table
  std::string detail;  // when not converted: the backend's whole message
  // Nodes the message blames, as the backend named them (a node name or a node's output name,
  // possibly with a prefix of its own), each with its reason.
  std::vector<std::pair<std::string, std::string>> blamed;
  // Op types the message says the backend has no conversion for, each with its reason.
  std::vector<std::pair<std::string, std::string>> blamed_op_types;
  // When converted: tensors produced by ops the device cannot run, and a reason for them.
  std::vector<std::string> unsupported_tensors;
  std::string unsupported_reason;
};

class SupportQuery {
 public:
  virtual ~SupportQuery() = default;
  virtual std::string backend_name() const = 0;  // "OpenVINO"
  // Why the backend cannot take a model input of this type; nullopt when it can.
  virtual std::optional<std::string> refuse_input_type(DType dtype) const = 0;
  virtual SupportAnswer query(const onnx::Model& model) = 0;
};

// A node of a control-flow node's body the backend's message blames.
struct BodyNodeFailure {
  std::string body;  // "then_branch", or "body/then_branch" for nested bodies
  std::string node_name, op_type, reason;
};

struct UnsupportedNode {
  int index = 0;
  std::string name, op_type;
  std::string reason, detail;  // as in SupportAnswer
  bool control_flow = false;   // an If/Loop/Scan: unsupported as a whole
  std::vector<BodyNodeFailure> body_failures;
};

struct CapabilityPartition {
  bool supported = true;
  int begin = 0, end = 0;  // main-graph node indices, [begin, end)
  // Polygraphy's file name: "supported_subgraph-nodes-<first>-<last>.onnx" (last inclusive).
  std::string file_name() const;
};

struct CapabilityReport {
  std::string backend;
  int node_count = 0;
  std::vector<CapabilityPartition> partitions;  // in order, covering every node
  std::vector<UnsupportedNode> unsupported;     // in node order
  // Supported neighbours the backend converts apart but not together (why they stay apart).
  std::vector<std::string> notes;
  bool fully_supported() const { return partitions.size() == 1 && partitions[0].supported; }
  // Polygraphy's summary table, per unsupported op type and reason: count, node names, reason;
  // then the control-flow nodes' body failures, the notes and the partitions.
  std::string summary() const;
};

// The model the analysis and the partitions work on: external data loaded, nodes in topological
// order (node indices refer to this order; a sorted model keeps its own), shapes inferred unless
// `infer_shapes` is false (then cuts need the types the model declares).
onnx::Model prepare_for_partitioning(onnx::Model model, bool infer_shapes = true);

// Partitions `prepared` (from prepare_for_partitioning). InvalidInputError when a graph input has
// a type the backend refuses, naming the input, or when the graph has no nodes.
CapabilityReport analyze_capability(const onnx::Model& prepared, SupportQuery& query);

}  // namespace parity::runtime
