// The candidates of `debug precision`: the model converted to float16/bfloat16 with a set of its
// nodes kept in float32 (through the converter, parity/onnx/reduced_precision.h), the nodes a
// search may choose from, and the keep list file `convert --keep-fp32 @FILE` reads.
#pragma once

#include <string>
#include <vector>

#include "parity/onnx/model.h"
#include "parity/onnx/reduced_precision.h"

namespace parity::debug {

struct PrecisionNode {
  std::string name;
  std::string op_type;
};

struct PrecisionSearchSpace {
  // Main-graph nodes in topological order that produce a float32 tensor and that the conversion
  // would convert (not matched by `options.keep_fp32` or, with default_keep, the default list).
  // Constant nodes are left out: they compute nothing, and their value is read in the precision of
  // each reader.
  std::vector<PrecisionNode> nodes;
  // Such nodes without a name: a keep list cannot name them, so the search leaves them out.
  std::vector<std::string> unnamed_op_types;
};

// `fp32` must have been shape-inferred (the types of intermediate tensors come from value_info).
PrecisionSearchSpace precision_search_space(const onnx::Model& fp32, const onnx::ReducedPrecisionOptions& options);

// A copy of `fp32` converted with `options`, its keep list extended by the named nodes.
onnx::Model convert_keeping(const onnx::Model& fp32, const onnx::ReducedPrecisionOptions& options,
                            const std::vector<std::string>& kept_node_names);

// The `--keep-fp32 @FILE` text: `# comment` lines (`header`, one comment a line), then one
// "node:NAME  # OP_TYPE" line per node.
std::string keep_list_file_text(const std::vector<PrecisionNode>& kept, const std::vector<std::string>& header);

}  // namespace parity::debug
