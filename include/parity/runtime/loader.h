// Lazy, composable model loaders (Polygraphy's ModelFromPath / InferShapes idea): a loader is a
// callable returning a model; nothing happens until a runner activates. Each has an eager twin.
#pragma once

#include <functional>
#include <string>

#include "parity/onnx/model.h"

namespace parity::runtime {

// The model a loader returns may be shared (a command parses its model once and hands the same
// one to every runner): treat it as read-only and copy it before changing it.
using ModelLoader = std::function<onnx::Model()>;

// Lazy: loads the model from `path` when called.
ModelLoader ModelFromPath(std::string path, onnx::LoadOptions options = {});
// Lazy: runs ONNX shape inference on the upstream loader's model (warning, not failing, on error).
ModelLoader InferShapes(ModelLoader upstream);

// Eager twins.
onnx::Model model_from_path(const std::string& path, const onnx::LoadOptions& options = {});
onnx::Model infer_shapes(onnx::Model model);

}  // namespace parity::runtime
