// Model loading options shared by commands that read an ONNX model: the model path,
// --external-data-dir, --no-shape-inference or --shape-inference, --no-onnxruntime-shape-inference, --check.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "parity/onnx/model.h"

namespace parity::cli {

class ModelArgs {
 public:
  // `shape_inference_by_default`: true adds --no-shape-inference (surgeon, convert, check lint); false adds
  // --shape-inference, opt-in, as Polygraphy's `run` and `inspect model` have it.
  // `checker_flag`: false leaves out --check (the debug tools' --check is their check command).
  // `model_required`: false lets the command run without a model (`run` with no runner is a no-op,
  // as in Polygraphy); path() is then empty.
  void add_to(CLI::App& app, bool shape_inference_by_default = true, bool checker_flag = true,
              bool model_required = true);
  // Called before add_to by a command that infers shapes as Polygraphy's does (surgeon sanitize):
  // ONNX Runtime's symbolic shape inference, falling back to ONNX's (runtime::infer_shapes), unless
  // --no-onnxruntime-shape-inference. Other commands use ONNX's shape inference only.
  void allow_onnxruntime_shape_inference() { onnxruntime_shape_inference_allowed_ = true; }
  // Whether this command line infers shapes with ONNX Runtime's symbolic shape inference first.
  bool onnxruntime_shape_inference() const {
    return onnxruntime_shape_inference_allowed_ && !no_onnxruntime_shape_inference_;
  }
  // Loads (and, unless disabled, shape-infers) the model, logging what it does as Polygraphy does:
  // "Loading model: <absolute path>" after shape inference and its warning, if any.
  onnx::Model load(const onnx::LoadOptions& options = {}) const;
  // load() on the first call, the same model afterwards: a command parses its model (and runs the
  // checker) once, however many runners and passes need it. The model is shared: read-only.
  // The first call's options stand for every later call.
  onnx::Model load_once(const onnx::LoadOptions& options = {});
  // `options` with this command line's --external-data-dir.
  onnx::LoadOptions load_options(onnx::LoadOptions options = {}) const;
  const std::string& path() const { return path_; }
  const std::string& external_data_dir() const { return external_data_dir_; }
  bool shape_inference() const { return !no_shape_inference_; }
  // Turns load()'s shape inference off: for a command that decides itself whether (and how) to infer
  // shapes (surgeon extract, --force-fallback-shape-inference).
  void disable_shape_inference() { no_shape_inference_ = true; }
  // Shape inference on `model`, logged as load() logs it (a warning on error, else Polygraphy's
  // "Shape inference completed successfully" at -v): ONNX's, or with `allow_onnxruntime` ONNX
  // Runtime's symbolic shape inference first (see runtime::infer_shapes).
  static void infer_shapes(onnx::Model& model, bool allow_onnxruntime = false);

 private:
  std::string path_;
  std::string external_data_dir_;
  bool no_shape_inference_ = false;
  bool check_ = false;
  bool no_onnxruntime_shape_inference_ = false;
  bool onnxruntime_shape_inference_allowed_ = false;  // see allow_onnxruntime_shape_inference
  std::optional<onnx::Model> loaded_;
};

}  // namespace parity::cli
