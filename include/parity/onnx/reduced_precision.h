// convert --fp-to-fp16 / --fp-to-bf16: float32 tensors and computation to float16 or bfloat16, with
// chosen nodes kept in float32 (docs/reduced-precision.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parity/onnx/model.h"

namespace parity::onnx {

enum class ReducedPrecision { kFloat16, kBFloat16 };

// "float16" / "bfloat16".
std::string_view reduced_precision_name(ReducedPrecision precision);

struct ReducedPrecisionOptions {
  ReducedPrecision precision = ReducedPrecision::kFloat16;
  // Keep graph inputs/outputs in float32 with Casts at the boundary (default, like onnxmltools'
  // keep_io_types=True).
  bool keep_io_types = true;
  // --keep-fp32 entries (op types, node names, re:patterns, @files: parity/onnx/precision_keep_list.h).
  std::vector<std::string> keep_fp32;
  // Also keep PrecisionKeepList::default_op_types() (off with --no-default-keep).
  bool default_keep = true;
};

struct ReducedPrecisionReport {
  int64_t initializers_converted = 0;  // converted in place or given a reduced-precision copy
  int64_t casts_inserted = 0;
  int64_t nodes_kept_by_list = 0;    // by --keep-fp32 or the default list (subgraph nodes of kept nodes included)
  int64_t nodes_kept_by_schema = 0;  // ops ONNX does not define in the reduced type at the model's opset
  std::vector<std::string> op_types_kept_by_schema;  // sorted, unique
};

// Converts float32 initializers, Constant values, value types and computation to float16 or
// bfloat16, in every graph (subgraphs included). Kept nodes (the keep list, and ops whose schema
// at the model's opset has no float16/bfloat16 version) compute in float32 together with their
// subgraphs; a tensor produced and read only by float32 nodes stays float32, and Casts are
// inserted only where a float32 and a reduced-precision node meet (and at the graph's inputs and
// outputs per keep_io_types). Inputs whose schema does not accept the reduced type (Resize
// scales...) read float32. An initializer read both ways stays float32 and gets a reduced copy.
// Requires shape inference to have run (types of intermediates come from value_info). Throws
// InvalidInputError for a --keep-fp32 node name or pattern matching no node (an op type absent
// from the model is only a warning).
ReducedPrecisionReport convert_float_to_reduced_precision(Model& model, const ReducedPrecisionOptions& options);

}  // namespace parity::onnx
