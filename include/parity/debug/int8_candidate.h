// The candidates of `debug precision --int8`: the float32 model quantized to Q/DQ int8 by the
// quantizer (parity/quantize/qdq_insertion.h) with the scales of one calibration and its keep list
// extended by the searched nodes, the nodes a search may choose from (those the quantizer would
// quantize), and the nodes to keep written for ONNX Runtime's `quantize_static`
// (nodes_to_exclude: node names) and NVIDIA ModelOpt's ONNX quantizer (nodes_to_exclude: patterns
// it matches with Python's re.match).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "parity/debug/precision_candidate.h"
#include "parity/onnx/model.h"

namespace parity::debug {

struct Int8Candidates {
  onnx::Model prepared;                  // the float32 model as quantizing prepares it (constants lowered)
  std::vector<std::string> keep_fp32;    // --keep-fp32's entries, kept in every candidate
  std::map<std::string, float> scales;   // the calibrated scale of every activation quantized with nothing searched kept
};

// A copy of `fp32` prepared for quantizing, with `keep_fp32` and `scales` (the one calibration's,
// made with the same keep list). Throws InvalidInputError as quantize::plan_quantization does.
Int8Candidates int8_candidates(const onnx::Model& fp32, const std::vector<std::string>& keep_fp32,
                               std::map<std::string, float> scales);

struct Int8SearchSpace {
  // The nodes quantized with nothing searched kept, named, in topological order.
  std::vector<PrecisionNode> nodes;
  std::vector<std::string> unnamed_op_types;  // such nodes without a name: left out of the search
  // The nodes the quantizer would quantize that --keep-fp32 keeps (every candidate keeps them).
  std::vector<PrecisionNode> kept_by_entries;
};

Int8SearchSpace int8_search_space(const Int8Candidates& candidates);

// The int8 model with `kept_node_names` (and the --keep-fp32 entries) left unquantized, the other
// quantized nodes' activations quantized with the calibrated scales.
onnx::Model quantize_keeping(const Int8Candidates& candidates, const std::vector<std::string>& kept_node_names);

// ONNX Runtime's quantize_static(..., nodes_to_exclude=json.load(FILE)): a JSON array of the node names.
std::string ort_nodes_to_exclude_json(const std::vector<PrecisionNode>& nodes);
// ModelOpt's quantize(..., nodes_to_exclude=json.load(FILE)) (and its CLI's --nodes_to_exclude):
// a JSON array of one pattern per node, `^NAME$` with NAME escaped as Python's re.escape does, since
// ModelOpt matches each pattern with re.match against every node name.
std::string modelopt_nodes_to_exclude_json(const std::vector<PrecisionNode>& nodes);
// `name` as a Python regular expression matching exactly it: every ASCII character other than a
// letter, a digit or `_` is escaped with a backslash.
std::string python_regex_escape(const std::string& name);

}  // namespace parity::debug
