// Polygraphy's picture flags of `simple` (in its "Comparison Function: simple" group):
// --save-heatmaps DIR, --show-heatmaps, --save-error-metrics-plot DIR, --show-error-metrics-plot.
// They become an ErrorPictures (parity/compare/error_pictures.h) whose observer `simple` calls for
// each output it compares.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

#include "parity/compare/error_pictures.h"

namespace parity::cli {

class ComparisonArgs;

class PictureArgs {
 public:
  void add_to(CLI::App& app);
  // Refuses the flags with a comparison function other than plain `simple` (nothing would draw them),
  // then hands the observer to `comparison`'s `simple` options.
  void parse(ComparisonArgs& comparison);
  // Starts the Python worker and checks matplotlib (before anything runs).
  void start();

 private:
  compare::ErrorPictureOptions options_;
  std::unique_ptr<compare::ErrorPictures> pictures_;
};

}  // namespace parity::cli
