#include "parity/runtime/loader.h"

#include "parity/core/logger.h"

namespace parity::runtime {

onnx::Model model_from_path(const std::string& path, const onnx::LoadOptions& options) {
  log::verbose("Loading model: {}", path);
  return onnx::load_model(path, options);
}

onnx::Model infer_shapes(onnx::Model model) {
  auto result = onnx::infer_shapes(*model.proto);
  if (!result.ok) log::warning("ONNX shape inference stopped with an error: {}", result.error);
  return model;
}

ModelLoader ModelFromPath(std::string path, onnx::LoadOptions options) {
  return [path = std::move(path), options] { return model_from_path(path, options); };
}

ModelLoader InferShapes(ModelLoader upstream) {
  return [upstream = std::move(upstream)] { return infer_shapes(upstream()); };
}

}  // namespace parity::runtime
