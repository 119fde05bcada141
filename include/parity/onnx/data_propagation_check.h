// Checks a model against what ONNX's shape inference with data propagation can step through
// without crashing. ONNX's Slice data propagator walks the sliced shape data with a 32-bit index
// advanced by the 64-bit step: a step near INT64_MAX wraps it negative (an out-of-bounds read,
// SIGSEGV) and one whose low 32 bits are zero (INT64_MIN) never advances it (an endless loop that
// grows memory). Legal models may carry such steps, so they are found before inference runs.
#pragma once

#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

// The largest |step| of a Slice the check lets data propagation see: the 32-bit index plus the
// step stays representable for any shape data shorter than 2^30 values.
inline constexpr int64_t kLargestDataPropagationSliceStep = int64_t{1} << 30;

// Describes the first Slice node (main graph, subgraphs, then model-local functions) whose steps
// input is a constant with a value beyond ±kLargestDataPropagationSliceStep, or is computed in the
// graph (its value then known only to data propagation itself): "node 'name' (Slice): step
// 9223372036854775807 ...". nullopt when data propagation is safe for every Slice.
std::optional<std::string> slice_unsafe_for_data_propagation(const ::onnx::ModelProto& model);

}  // namespace parity::onnx
