// --save-model-explorer-overlay PATH: the run's errors as Google Model Explorer's custom node data
// (parity/compare/model_explorer_overlay.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "parity/compare/judge.h"

namespace parity::cli {

class ModelExplorerArgs {
 public:
  void add_to(CLI::App& app);
  // Checks that the file's folder exists and can be written (before anything runs).
  void parse() const;
  // Writes the overlay of a run that reached its verdict.
  void write(const compare::Verdict& verdict) const;

 private:
  std::string path_;
};

}  // namespace parity::cli
