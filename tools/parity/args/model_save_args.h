// Polygraphy's "ONNX Model Saving" options, shared by every command that writes an ONNX model:
// --save-external-data [file], --external-data-size-threshold, --no-save-all-tensors-to-one-file.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "parity/onnx/model.h"

namespace parity::cli {

class ModelSaveArgs {
 public:
  void add_to(CLI::App& app);
  // The save options these flags give (external data only when --save-external-data is given, or
  // when the model would pass protobuf's 2 GB limit). InvalidInputError for a bad threshold.
  onnx::SaveOptions options() const;
  // Whether --save-external-data was given (for commands whose output may not be an ONNX model).
  bool external_data_requested() const { return save_external_data_ && save_external_data_->count() > 0; }
  // Saves `model` to `path` with options(), logging as Polygraphy does.
  void save(const onnx::Model& model, const std::string& path) const;

 private:
  CLI::Option* save_external_data_ = nullptr;
  std::string external_data_path_;
  std::string size_threshold_;
  bool one_file_per_tensor_ = false;
};

}  // namespace parity::cli
