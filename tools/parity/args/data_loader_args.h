// Polygraphy's data loader flags (--seed, --iterations, --data-loader-backend-module, --val-range, --input-shapes,
// --load-inputs,
// --data-loader-script) and --save-inputs, turned into the Comparator's data loader.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/compare/comparator.h"
#include "parity/core/feed_stream.h"
#include "parity/runtime/data_loader.h"

namespace parity::cli {

class GeneratedScript;

// Which of the group's flags a command takes: all for the commands that run inferences; a command
// whose data loader feeds one inference (surgeon's fallback shape inference) leaves out
// --iterations and --warm-up, and one that takes input shapes through a flag of its own
// (surgeon extract's --model-input-shapes) names that flag instead of --input-shapes.
struct DataLoaderFlags {
  bool iterations = true;                                   // --iterations and --warm-up
  bool warm_up = true;  // --warm-up (with --iterations); commands that run no timed inferences leave it out
  std::string input_shapes = "--input-shapes,--inputs";     // CLI11 names; empty: no such flag
  std::string input_shapes_help = "Input shapes: <name>:[d0,d1,...] ...";
};

class DataLoaderArgs {
 public:
  // Adds the "Data Loader" group (and --warm-up there, where Parity's users know it).
  void add_to(CLI::App& app, const DataLoaderFlags& flags = {});
  // Adds --save-inputs to `group`.
  void add_save_inputs_to(CLI::App& app, const char* group);
  // Checks the values (before anything runs).
  void parse();
  int warm_up() const { return warm_up_; }
  // --iterations as given (after parse()).
  int iterations() const { return iterations_; }
  // Random data: one feed, whatever --iterations says (performance mode reuses it for every timed
  // inference and reads --iterations as their count).
  void generate_one_feed() { options_.iterations = 1; }

  // The feeds, made from the first runner's input metadata: loaded files, a script's, or seeded
  // random data (checking --input-shapes / --val-range names against the inputs).
  compare::DataLoaderFunc data_loader() const;
  // The same feeds as a stream, taken one at a time (calibration): a script's as it yields them, random
  // data generated as taken.
  FeedStreamFunc feed_stream() const;
  // feed_stream(), with a data loader script's process started now instead of at the first call, so
  // that its interpreter starts (and imports numpy) while the command loads the model and makes its
  // sessions. The first call takes that process; later calls start the script again.
  FeedStreamFunc feed_stream_started_now() const;
  // Random data as data_loader() makes it (--seed, --val-range, --input-shapes), one feed, with
  // `shapes` overriding --input-shapes for the inputs they name (performance mode's --perf-shapes).
  compare::DataLoaderFunc random_data_loader_with_shapes(
      const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes) const;
  // True when data_loader() generates random data (neither --load-inputs nor --data-loader-script).
  bool uses_random_data() const { return load_inputs_.empty() && data_loader_script_.empty(); }
  // Saves the feeds when --save-inputs is given.
  void save_inputs(const std::vector<NamedTensors>& feeds) const;

  // --gen-script: the "# Data Loader" section; returns the keyword arguments Comparator.run takes
  // from this group (warm_up=, data_loader=, save_inputs_path=), in Polygraphy's order.
  std::vector<std::string> add_to_script(GeneratedScript& script) const;

 private:
  std::vector<NamedTensors> load_input_files(const TensorMetadata& metadata) const;
  void check_input_names(const TensorMetadata& metadata) const;
  bool random_flags_given() const;
  // The warning that the random data flags given are ignored because `source_flag` supplies the feeds.
  void warn_random_flags_ignored(const char* source_flag) const;

  std::string input_shapes_flag_ = "--input-shapes";  // for messages
  int64_t seed_ = 1;
  int iterations_ = 1;
  int warm_up_ = 0;
  std::vector<std::string> val_range_, input_shapes_, load_inputs_;
  std::string data_loader_script_, save_inputs_;
  std::string backend_module_ = "numpy";  // --data-loader-backend-module
  runtime::DataLoaderOptions options_;
};

}  // namespace parity::cli
