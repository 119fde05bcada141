// Polygraphy's fallback shape inference (`surgeon extract|sanitize --force-fallback-shape-inference`,
// and extract's answer to `auto` metadata ONNX shape inference cannot give): the model runs once on
// the reference runner with every tensor it computes marked as an output, and what each tensor
// held is its dtype and its (static) shape. Dynamic dims become those of the data it ran on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "parity/core/array_io.h"
#include "parity/core/tensor_metadata.h"
#include "parity/onnx/model.h"

namespace parity::runtime {

// Makes the one feed of the run from the model's input metadata (a data loader's first iteration).
using FeedMaker = std::function<NamedTensors(const TensorMetadata& inputs)>;

// Runs `model` once on the reference runner on `make_feed`'s feed. Returns the dtype and shape of
// every tensor of the main graph that ran (graph inputs fed, node outputs; sequences, which have no
// tensor form, are left out), feed first, then in execution order. Logs the feed's metadata as
// Polygraphy does ("Running fallback shape inference using input metadata: ..."). Throws what the
// run throws (a node that fails, a feed that does not fit), naming the tensor or node.
TensorMetadata fallback_shape_inference(const onnx::Model& model, const FeedMaker& make_feed);

// Polygraphy's set_shapes_from_layerwise_meta: every tensor of the main graph that `metadata` names
// (graph inputs and outputs, node outputs) takes its dtype and shape, replacing what the model said;
// intermediate tensors are described in value_info (which is rebuilt). Initializers keep theirs.
void set_shapes_from_metadata(::onnx::GraphProto& graph, const TensorMetadata& metadata);

}  // namespace parity::runtime
