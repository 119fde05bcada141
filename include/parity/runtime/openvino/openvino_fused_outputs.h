// The fusion-preserving layerwise mode (`--ov-outputs mark fused`): mark only the tensors that
// exist in the compiled plain model, so that the marked model executes the same fused kernels.
//
// Marking every ONNX tensor (`mark all`) makes each one a model output, which keeps OpenVINO from
// fusing it into its consumer and from keeping it in reduced precision: the marked model computes
// differently from the one deployed. Here the plain model is compiled first and its executed
// layers (parity/runtime/openvino/openvino_engine_report.h) give the tensors that already leave a layer:
// for each executed compute layer, the outputs of the ONNX nodes it covers (named by OpenVINO or
// attributed by dataflow) that a node outside the layer reads or that are graph outputs. Only those
// are marked, and each says which layer produced it and which ONNX nodes that layer covers.
//
// Marking such a tensor can still change a layer: its Result wants f32, so a layer that wrote
// bf16 for its consumer would write f32 instead (its consumer then reads unrounded values, and a
// bf16 consumer such as a pooling runs in f32), so a marked tensor is returned in the type its layer
// writes in the plain model (bf16, widened to float32 by the runner, exactly). A layer may still
// lose a fusion with a reorder. The compiled marked model's layers are compared with the
// plain model's (changed_layers); the marks around a layer that changed are dropped and the model
// compiled again, until the layers match.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "parity/onnx/model.h"
#include "parity/runtime/openvino/openvino_engine_report.h"

namespace parity::runtime {

namespace openvino {
struct ExecutedLayer;
}  // namespace openvino

// One tensor a layer of the compiled plain model writes out.
struct FusedLayerOutput {
  std::string tensor;      // the ONNX tensor the layer's output holds
  std::string layer;       // the executed layer's name
  std::string layer_type;  // layerType ("Convolution")
  std::string kernel;      // primitiveType
  std::string precision;   // runtimePrecision
  std::string output_precision;  // the element type the layer writes (outputPrecisions' first)
  // The ONNX nodes the layer covers (named by OpenVINO, then attributed by dataflow), graph order.
  std::vector<std::string> onnx_nodes;
  // The tensors the layer's ONNX nodes read from outside it (its inputs in the ONNX graph).
  std::vector<std::string> inputs;

  // "layer 'Multiply_3695' [Convolution | brgconv_avx512_bf16 | bf16] covering ONNX nodes conv1, bn1, relu1"
  std::string description() const;
};

// The output tensors of `report`'s executed compute layers (the report of the plain model,
// compiled from `model`), in execution order; layers covering no ONNX node give none.
std::vector<FusedLayerOutput> fused_layer_outputs(const EngineReport& report, const onnx::Model& model);

// How a layer of the plain model looks in the marked one.
struct ChangedLayer {
  std::string layer;   // the plain model's layer name
  std::string change;  // "kernel brgconv_avx512_bf16 -> jit_avx512_bf16", "not executed", ...
  // The original ops the plain layer fuses and the marked one no longer does (an Add a convolution
  // fused, executed on its own once a tensor it reads is marked).
  std::vector<std::string> lost_ops;
};

// The compute layers of `plain` (not inputs, outputs, constants, reorders) that `marked` does not
// execute with the same type, kernel, runtime and output precisions and fused original ops, and the
// layers `marked` executes besides. Layers are matched by name, then those left by name with digits
// ignored between their matched neighbours (OpenVINO numbers the ops it creates, "Multiply_3695",
// from a counter that grows with each compile); fused op names likewise.
std::vector<ChangedLayer> changed_layers(const std::vector<openvino::ExecutedLayer>& plain,
                                         const std::vector<openvino::ExecutedLayer>& marked);

// The marks to drop for the changed layers: the tensors those layers write and those they read
// from other layers; with `hops` > 0 also those of the layers that many steps up and down the
// dataflow (a mark downstream can stop OpenVINO moving an op, a scale, into the changed layer).
std::set<std::string> marks_around(const std::vector<ChangedLayer>& changed,
                                   const std::vector<FusedLayerOutput>& outputs, int hops);

}  // namespace parity::runtime
