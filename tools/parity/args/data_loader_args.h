// Polygraphy's data loader flags (--seed, --iterations, --val-range, --input-shapes, --load-inputs,
// --data-loader-script) and --save-inputs, turned into the Comparator's data loader.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/compare/comparator.h"
#include "parity/runtime/data_loader.h"

namespace parity::cli {

class GeneratedScript;

class DataLoaderArgs {
 public:
  // Adds the "Data Loader" group (and, with `with_warm_up`, --warm-up there, where Parity's users
  // know it; commands that run no timed inferences leave it out).
  void add_to(CLI::App& app, bool with_warm_up = true);
  // Adds --save-inputs to `group`.
  void add_save_inputs_to(CLI::App& app, const char* group);
  // Checks the values (before anything runs).
  void parse();
  int warm_up() const { return warm_up_; }

  // The feeds, made from the first runner's input metadata: loaded files, a script's, or seeded
  // random data (checking --input-shapes / --val-range names against the inputs).
  compare::DataLoaderFunc data_loader() const;
  // Saves the feeds when --save-inputs is given.
  void save_inputs(const std::vector<NamedTensors>& feeds) const;

  // --gen-script: the "# Data Loader" section; returns the keyword arguments Comparator.run takes
  // from this group (warm_up=, data_loader=, save_inputs_path=), in Polygraphy's order.
  std::vector<std::string> add_to_script(GeneratedScript& script) const;

 private:
  std::vector<NamedTensors> load_input_files(const TensorMetadata& metadata) const;
  void check_input_names(const TensorMetadata& metadata) const;
  bool random_flags_given() const;

  int64_t seed_ = 1;
  int iterations_ = 1;
  int warm_up_ = 0;
  std::vector<std::string> val_range_, input_shapes_, load_inputs_;
  std::string data_loader_script_, save_inputs_;
  runtime::DataLoaderOptions options_;
};

}  // namespace parity::cli
