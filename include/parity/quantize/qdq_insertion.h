// Which nodes of a float32 ONNX model are quantized, and the QuantizeLinear/DequantizeLinear
// (Q/DQ) pairs that quantize them (docs/int8.md, "Which nodes are quantized").
//
// The rule follows what TensorRT and ONNX Runtime run in int8: the weighted ops (Conv,
// ConvTranspose, MatMul, Gemm) and the pooling ops that keep int8 flowing between them (MaxPool,
// AveragePool, GlobalAveragePool) have their float32 inputs quantized, except biases (Conv's and
// Gemm's third input), nodes the keep list names (--keep-fp32) and nodes inside subgraphs.
// - An activation (any input that is not an initializer) gets one Q/DQ pair, per tensor and
//   symmetric (zero point 0, int8), its scale from calibration; every quantized consumer reads the
//   pair's output, other consumers the float tensor.
// - A weight (an initializer) is stored as int8 with a DequantizeLinear, symmetric per output
//   channel: Conv's weight along axis 0, ConvTranspose's along axis 1 (per tensor when grouped),
//   Gemm's B along 0 with transB else 1, MatMul's B along its last axis; other weight inputs (a
//   constant A, a 1-D B), and every weight below opset 13 (no per-channel DequantizeLinear), per
//   tensor. Scale = max |w| / 127 per channel (1 for an all-zero channel).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "parity/onnx/model.h"
#include "parity/onnx/precision_keep_list.h"

namespace parity::quantize {

// The op types quantized by default, in the order docs/int8.md lists them.
const std::vector<std::string>& quantized_op_types();

struct QuantizationPlan {
  std::vector<std::string> nodes;        // names of the nodes quantized, in graph order
  std::vector<int> node_indices;         // their indices in the main graph (names may be empty)
  std::vector<std::string> activations;  // float32 tensors to calibrate, in graph order
  int64_t nodes_kept = 0;                // quantizable nodes the keep list left in float32
};

// Lowers Constant nodes to initializers and runs shape inference on `model` (a tensor's type must
// be known float32 to be quantized), then plans. Throws InvalidInputError for a model with Q/DQ
// nodes already (naming the first; see remove_qdq), an opset below 10 (no QuantizeLinear), or a keep-list node name or pattern that matches no node.
QuantizationPlan plan_quantization(onnx::Model& model, onnx::PrecisionKeepList keep);

struct QdqReport {
  int64_t activation_pairs = 0;  // Q/DQ pairs on activations
  int64_t weights = 0;           // weights stored as int8
};

// Inserts the plan's Q/DQ nodes with `scales` (tensor -> activation scale; every planned
// activation must have one: InvalidInputError naming it otherwise), then drops float weights
// nothing reads any more and sorts the graph.
QdqReport insert_qdq(onnx::Model& model, const QuantizationPlan& plan, const std::map<std::string, float>& scales);

// The QuantizeLinear/DequantizeLinear nodes of the main graph (domain ai.onnx or com.microsoft).
std::vector<const ::onnx::NodeProto*> qdq_nodes(const ::onnx::GraphProto& graph);

}  // namespace parity::quantize
