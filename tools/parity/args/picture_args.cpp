// Polygraphy's --save-heatmaps, --show-heatmaps, --save-error-metrics-plot, --show-error-metrics-plot.
#include "args/picture_args.h"

#include "args/comparison_args.h"
#include "parity/core/error.h"

namespace parity::cli {

void PictureArgs::add_to(CLI::App& app) {
  const char* simple = "Comparison Function: simple";
  app.add_option("--save-heatmaps", options_.save_heatmaps,
                 "[EXPERIMENTAL] Save heatmaps of the absolute and relative error of each compared output into this "
                 "directory (SVG, Polygraphy's file names; outputs of rank 0 or 1 get none)")
      ->group(simple);
  app.add_flag("--show-heatmaps", options_.show_heatmaps,
               "[EXPERIMENTAL] Display heatmaps of the absolute and relative error (needs a display)")
      ->group(simple);
  app.add_option("--save-error-metrics-plot", options_.save_error_metrics_plot,
                 "[EXPERIMENTAL] Save a plot of the absolute and relative error against the reference output's "
                 "magnitude for each compared output into this directory (error_metrics_<output>.png)")
      ->group(simple);
  app.add_flag("--show-error-metrics-plot", options_.show_error_metrics_plot,
               "[EXPERIMENTAL] Display the error metrics plot (needs a display)")
      ->group(simple);
}

void PictureArgs::parse(ComparisonArgs& comparison) {
  if (!options_.any()) return;
  if (!comparison.is_plain_simple())
    raise<InvalidInputError>("--save-heatmaps, --show-heatmaps, --save-error-metrics-plot and "
                             "--show-error-metrics-plot draw the comparisons of --compare simple; leave them out with "
                             "another comparison function or --compare-func-script");
  pictures_ = std::make_unique<compare::ErrorPictures>(options_);
  comparison.add_on_compared(pictures_->observer());
}

void PictureArgs::start() {
  if (pictures_) pictures_->start();
}

}  // namespace parity::cli
