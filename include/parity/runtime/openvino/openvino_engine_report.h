// What OpenVINO executes for a compiled model (`parity inspect model model.ovc`, `parity inspect
// model model.onnx --openvino`): the runtime model's layers in execution order, each with its
// layer type, kernel (primitiveType), runtime and output precisions, output shapes and the ops it
// was made of (originalLayersNames), mapped back to the ONNX nodes they came from; then which ONNX
// compute nodes the executed layers cover and which OpenVINO folded into constants or removed.
//
// Mapping OpenVINO's original names to ONNX nodes: OpenVINO's ONNX frontend names its ops after
// the ONNX node (or, for an unnamed node, its output tensor), and ops it splits off carry a
// "/suffix" ("attn.q_matmul/transpose_b"). A name maps to the ONNX node of that name, else to the
// producer of the tensor of that name, else the same after dropping "/..." suffixes from the
// right; names that map to nothing are OpenVINO's own ops (MVN_8, Constant_3758) and are listed
// as such. OpenVINO's CPU plugin does not name every op it fuses: a Conv merged with the
// BatchNormalization after it becomes "Multiply_3695", listing only the BatchNormalization. So a
// node no layer names is attributed by dataflow when every consumer of its outputs is in one and
// the same layer (named or itself attributed), none of its outputs being a graph output: it was
// fused into that layer ("ONNX nodes (by dataflow)"). The rest are folded into constants (named
// only by constant layers) or removed (named by no layer and not attributable).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/onnx/model.h"

namespace parity::runtime {

class OpenvinoRunner;

struct EngineLayer {
  enum class Kind { kInput, kOutput, kConstant, kReorder, kCompute };
  Kind kind = Kind::kCompute;
  std::string name;
  std::string layer_type;         // layerType
  std::string kernel;             // primitiveType
  std::string runtime_precision;  // runtimePrecision
  std::string output_precisions;  // outputPrecisions
  std::vector<std::string> output_shapes;
  std::vector<std::string> original_names;  // originalLayersNames as OpenVINO gives them
  std::vector<std::string> onnx_nodes;      // the ONNX nodes they map to (graph order, no repeats)
  std::vector<std::string> dataflow_nodes;  // ONNX nodes no layer names, attributed here by dataflow
  std::vector<std::string> openvino_ops;    // original names mapping to no ONNX node
};

struct EngineReport {
  std::string model;  // the file inspected
  std::string openvino_version;
  std::string device = "CPU";
  std::string inference_precision;
  std::vector<EngineLayer> layers;  // every runtime op, in execution order (constants included)
  bool has_onnx = false;            // false for a compiled model file: no ONNX mapping
  // ONNX compute nodes (the main graph's nodes except Constant; an unnamed node goes by its first
  // output), in graph order, each in exactly one of the three lists.
  std::vector<std::string> covered_nodes;  // named by an executed (non-constant) layer or attributed to one
  std::vector<std::string> folded_nodes;   // named only by constant layers: folded into constants
  std::vector<std::string> removed_nodes;  // named by no layer
  std::size_t onnx_compute_nodes = 0;
  std::size_t dataflow_covered = 0;  // how many of covered_nodes were attributed by dataflow

  std::size_t executed_layers() const;  // compute layers and reorders (not inputs, outputs, constants)
  std::map<std::string, std::size_t> layers_per_precision() const;  // executed layers by runtimePrecision
  std::map<std::string, std::size_t> layers_per_kernel() const;     // executed layers by primitiveType
  // Polygraphy-style text (its `inspect model model.engine`): the header and the summary; with
  // `layers` also the layer list (constants counted, not listed) with the ONNX nodes of each; with
  // `attrs` (and layers) also each layer's originalLayersNames as OpenVINO gives them.
  std::string to_text(bool layers, bool attrs) const;
  nlohmann::ordered_json to_json() const;

  // The ONNX side of a report made with the ONNX model (has_onnx): each layer's ONNX nodes and the
  // summary's lists, as one line of JSON for a compiled model file's header (onnx-map).
  std::string onnx_map_text() const;
  // Takes the ONNX side from onnx_map_text() of the ONNX model the file was compiled from: layers
  // matched by name (an imported model keeps its compute layers' names), has_onnx set. FileError
  // naming `file` when the text is not such a map.
  void apply_onnx_map(const std::string& text, const std::string& file);

 private:
  // The ONNX coverage fields (compute nodes, covered, dataflow-covered, folded, removed) into `json`:
  // to_json's summary and onnx_map_text's map share them.
  void add_onnx_coverage(nlohmann::ordered_json& json) const;
};

// The runner must be active. `onnx_model`: the ONNX model it was compiled from (nullptr for a
// compiled model file).
EngineReport describe_openvino_engine(const OpenvinoRunner& runner, const onnx::Model* onnx_model);

}  // namespace parity::runtime
