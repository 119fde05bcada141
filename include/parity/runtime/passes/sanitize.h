// Polygraphy's `surgeon sanitize` passes in its order: input shapes overridden (the graph cut at a
// named tensor that is no graph input), fallback shape inference, constant folding, cleanup, then a
// topological sort, each only when asked. The loader's steps (outputs marked, unbounded shapes
// bounded) come before, on the model given.
#pragma once

#include <optional>
#include <string>

#include "parity/core/tensor_metadata.h"
#include "parity/onnx/model.h"
#include "parity/runtime/passes/fallback_shape_inference.h"
#include "parity/runtime/passes/fold_constants.h"

namespace parity::runtime {

struct SanitizeOptions {
  std::string model_name;       // the model in messages (as the user gave it)
  TensorMetadata input_shapes;  // --override-input-shapes: graph inputs, or tensors to cut the graph at
  // --force-fallback-shape-inference: every tensor's dtype and shape from one reference run on this
  // feed (empty: not done).
  FeedMaker fallback_feed;
  std::optional<FoldOptions> fold;  // --fold-constants
  bool cleanup = false;             // unused nodes, initializers and graph inputs removed
  bool toposort = false;
  // Shape inference after the shapes are overridden and after sorting (Polygraphy's InferShapes).
  bool shape_inference = true;
  bool allow_onnxruntime_shape_inference = false;
};

// Applies the passes to `model` in place, logging each as Polygraphy does.
void sanitize(onnx::Model& model, const SanitizeOptions& options);

}  // namespace parity::runtime
