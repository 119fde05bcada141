// Slice steps that third-party code steps through wrongly, found before a model reaches it.
//
// ONNX's Slice data propagation walks the sliced shape data with a 32-bit index advanced by the
// 64-bit step: a step near INT64_MAX wraps it negative (an out-of-bounds read, SIGSEGV) and one
// whose low 32 bits are zero (INT64_MIN) never advances it (an endless loop that grows memory).
// OpenVINO's CPU plugin, slicing shape data of a dynamic shape at inference, divides by a
// truncated negative step below -2^31 (SIGFPE). Legal models may carry such steps.
#pragma once

#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

// The |step| the checks below allow: the 32-bit index plus the step stays representable for any
// sliced data shorter than 2^30 values.
inline constexpr int64_t kLargestSafeSliceStep = int64_t{1} << 30;

// A Slice node whose steps the caller's range does not allow.
struct UnsafeSliceStep {
  std::string node;                // "node 'name' (Slice)": its name, else its first output's
  std::string steps;               // the steps input's name
  std::optional<int64_t> step;     // the constant step out of range; nullopt: the steps are computed
};

// Which Slice steps a check lets through.
struct SliceStepRange {
  int64_t lowest = -kLargestSafeSliceStep;
  int64_t highest = kLargestSafeSliceStep;
  bool computed_steps_allowed = false;  // steps computed in the graph (their values unknown here)
};

// The first Slice node (main graph, subgraphs, then model-local functions) whose steps input is a
// constant holding a value outside `range`, or is computed in the graph when the range does not
// allow that. Constants are initializers and Constant nodes of INT32/INT64 stored in the model
// (external data is not read by either consumer).
std::optional<UnsafeSliceStep> first_unsafe_slice_step(const ::onnx::ModelProto& model, const SliceStepRange& range);

// For ONNX's shape inference with data propagation: "node 'name' (Slice): step ... would
// overflow..." for the first Slice it cannot step through (any step beyond ±2^30, or computed).
std::optional<std::string> slice_unsafe_for_data_propagation(const ::onnx::ModelProto& model);

// True when PARITY_SKIP_MODEL_VALIDATION is "1": a test and diagnostic switch that hands models to
// OpenVINO without Parity's checks of them first (check_slice_steps_for_openvino), so that a crash
// inside OpenVINO itself can be reached and its containment tested.
bool model_validation_skipped();

// For OpenVINO (unless model_validation_skipped()): throws InvalidInputError naming `model_label` and the node for the first Slice
// with a constant step below -2^30 (computed steps are left to OpenVINO).
void check_slice_steps_for_openvino(const ::onnx::ModelProto& model, const std::string& model_label);

}  // namespace parity::onnx
