#include "args/model_save_args.h"

#include "args/tensor_meta_parse.h"
#include "parity/core/logger.h"

namespace parity::cli {

void ModelSaveArgs::add_to(CLI::App& app) {
  const char* group = "ONNX Model Saving";
  save_external_data_ =
      app.add_option("--save-external-data,--external-data-path", external_data_path_,
                     "Save the weights in an external data file beside the model; the optional value names the file "
                     "(a plain file name, always in the model's folder; default: <model file>.data)")
          ->expected(0, 1)
          ->group(group);
  app.add_option("--external-data-size-threshold", size_threshold_,
                 "Tensors of at least this many bytes go to the external file (K, M, G suffixes allowed; default "
                 "1024). Only with --save-external-data")
      ->group(group);
  app.add_flag("--no-save-all-tensors-to-one-file", one_file_per_tensor_,
               "Write each external tensor to its own file, named after the tensor. Only with --save-external-data")
      ->group(group);
}

onnx::SaveOptions ModelSaveArgs::options() const {
  onnx::SaveOptions options;
  const bool external = save_external_data_ && save_external_data_->count() > 0;
  if (!external) {
    // As Polygraphy: without --save-external-data these have no effect (its warning for the threshold).
    if (!size_threshold_.empty())
      log::warning("size_threshold is set, but external data path has not been set. No external data will be "
                   "written.");
    if (one_file_per_tensor_)
      log::warning("--no-save-all-tensors-to-one-file has no effect without --save-external-data");
    return options;
  }
  options.external_data = onnx::ExternalData::kAlways;
  options.location = external_data_path_;
  if (!size_threshold_.empty())
    options.size_threshold =
        static_cast<std::size_t>(parse_num_bytes(size_threshold_, "--external-data-size-threshold"));
  options.all_tensors_to_one_file = !one_file_per_tensor_;
  return options;
}

void ModelSaveArgs::save(const onnx::Model& model, const std::string& path) const {
  onnx::SaveOptions save_options = options();
  log::info("Saving ONNX model to: {}", path);
  if (save_options.external_data == onnx::ExternalData::kAlways)
    log::verbose("Saving external data for ONNX model to: {}",
              !save_options.all_tensors_to_one_file ? std::string("one file per tensor")
              : save_options.location.empty()        ? std::filesystem::path(path).filename().string() + ".data"
                                                     : save_options.location);
  onnx::save_model(model, path, save_options);
}

}  // namespace parity::cli
