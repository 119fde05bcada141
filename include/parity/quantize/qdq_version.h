// The Q/DQ version of some of a float model's nodes, taken from the model quantized from it: for
// error attribution under --int8, a node run alone as the int8 model runs it.
#pragma once

#include "parity/onnx/model.h"

namespace parity::quantize {

// Replaces each node of `model` (a model of some of the float model's nodes, its inputs possibly
// renamed) that `quantized` (the float model after Q/DQ insertion, docs/int8.md) holds under the
// same name and op type and reads through Q/DQ nodes: each such input then reads, instead of the
// float tensor, the DequantizeLinear `quantized` puts before the node, and the QuantizeLinear
// before that for an activation, applied to the tensor `model`'s node reads; their scales, zero
// points and int8 weights are copied along. Nodes `quantized` does not quantize are left as they
// are. Returns how many nodes were replaced.
int take_qdq_versions(onnx::Model& model, const onnx::Model& quantized);

}  // namespace parity::quantize
