#include "args/model_args.h"

#include <chrono>
#include <filesystem>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/onnxrt/symbolic_shape_inference.h"

namespace parity::cli {

void ModelArgs::add_to(CLI::App& app, bool shape_inference_by_default, bool checker_flag, bool model_required) {
  const char* group = "ONNX Model Loading";
  app.add_option("model_file", path_, "Path to the ONNX model")->required(model_required);
  app.add_option("--external-data-dir,--load-external-data,--ext", external_data_dir_,
                 "Folder holding the model's external data (default: the model's folder)")->group(group);
  if (shape_inference_by_default) {
    app.add_flag("--no-shape-inference", no_shape_inference_, "Do not run ONNX shape inference")->group(group);
  } else {
    no_shape_inference_ = true;
    app.add_flag_callback("--shape-inference,--do-shape-inference", [this] { no_shape_inference_ = false; },
                          "Run ONNX shape inference on the model when loading it")->group(group);
  }
  // Polygraphy's switch from ONNX Runtime's symbolic shape inference to ONNX's.
  const char* onnxruntime_help =
      onnxruntime_shape_inference_allowed_
          ? "Use ONNX's shape inference (`onnx.shape_inference`) instead of ONNX Runtime's symbolic shape inference "
            "(`onnxruntime.tools.symbolic_shape_infer`, run in the Python that has the onnxruntime package and "
            "sympy), which this command uses by default, as Polygraphy does, falling back to ONNX's when it "
            "cannot run"
          : "Use ONNX's shape inference, not ONNX Runtime's symbolic shape inference (Polygraphy's flag). This "
            "command always infers shapes with ONNX's own shape inference (only surgeon sanitize uses ONNX "
            "Runtime's), so this is what happens with or without the flag";
  app.add_flag("--no-onnxruntime-shape-inference", no_onnxruntime_shape_inference_, onnxruntime_help)->group(group);
  if (checker_flag)
    app.add_flag("--check", check_, "Run ONNX's checker on the model and fail on any error")->group(group);
}

onnx::LoadOptions ModelArgs::load_options(onnx::LoadOptions options) const {
  if (!external_data_dir_.empty()) options.external_data_dir = external_data_dir_;
  return options;
}

namespace {

// The path as Polygraphy names it in "Loading model:": os.path.abspath (absolute, normalised).
std::string absolute_path(const std::string& path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) return path;
  std::string text = absolute.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

onnx::Model ModelArgs::load(const onnx::LoadOptions& options) const {
  // As in Polygraphy, shape inference runs before the "Loading model" line (its warning first).
  const std::string shown_path = absolute_path(path_);
  if (no_shape_inference_) log::info("Loading model: {}", shown_path);
  auto start = std::chrono::steady_clock::now();
  onnx::Model model;
  try {
    model = onnx::load_model(path_, load_options(options));
  } catch (const Error&) {
    if (!no_shape_inference_) log::info("Loading model: {}", shown_path);
    throw;
  }
  log::verbose("Loaded {} bytes of protobuf ({} nodes in the main graph, {} initializers) in {:.3f} ms",
               model->ByteSizeLong(), model->graph().node_size(), model->graph().initializer_size(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  if (!no_shape_inference_) {
    infer_shapes(model, onnxruntime_shape_inference());
    log::info("Loading model: {}", shown_path);
  }
  if (check_) {
    with_context(path_, [&] { onnx::check_model(model, /*full_check=*/false); });
    log::info("ONNX checker: the model is valid");
  }
  return model;
}

void ModelArgs::infer_shapes(onnx::Model& model, bool allow_onnxruntime) {
  if (!allow_onnxruntime) log::verbose("Running ONNX shape inference (data propagation on)");
  auto result = runtime::infer_shapes(model, allow_onnxruntime);
  if (!result.ok) log::warning("ONNX shape inference exited with an error:\n{}", result.error);
  else log::verbose("Shape inference completed successfully");  // Polygraphy's line, which its tests look for
}

onnx::Model ModelArgs::load_once(const onnx::LoadOptions& options) {
  if (!loaded_) loaded_ = load(options);
  return *loaded_;
}

}  // namespace parity::cli
