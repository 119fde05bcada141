// --save-model-explorer-overlay PATH.
#include "args/model_explorer_args.h"

#include <unistd.h>

#include <filesystem>

#include "parity/compare/model_explorer_overlay.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {

void ModelExplorerArgs::add_to(CLI::App& app) {
  app.add_option("--save-model-explorer-overlay", path_,
                 "Save each compared tensor's largest absolute error as node data for Google's Model Explorer "
                 "(custom node data JSON, coloured by the tolerance), to load beside the model (docs/pictures.md)")
      ->group("Comparator Comparisons");
}

void ModelExplorerArgs::parse() const {
  if (path_.empty()) return;
  std::filesystem::path folder = std::filesystem::path(path_).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error))
    raise<FileError>("--save-model-explorer-overlay {}: the folder {} does not exist", path_, folder.string());
  if (::access(folder.c_str(), W_OK) != 0)
    raise<FileError>("--save-model-explorer-overlay {}: the folder {} cannot be written", path_, folder.string());
  if (std::filesystem::is_directory(path_, error))
    raise<FileError>("--save-model-explorer-overlay {}: is a folder, not a file", path_);
}

void ModelExplorerArgs::write(const compare::Verdict& verdict) const {
  if (path_.empty()) return;
  compare::save_model_explorer_overlay(path_, verdict);
  log::info("Saved Model Explorer node data to {}", path_);
}

}  // namespace parity::cli
