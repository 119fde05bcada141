// Polygraphy's pictures of `simple`'s comparisons: heatmaps of each output's absolute and relative
// error (--save-heatmaps DIR, --show-heatmaps) and the plot of both errors against the reference's
// magnitude (--save-error-metrics-plot DIR, --show-error-metrics-plot), with Polygraphy's file names
// and layout. They are drawn with matplotlib by python/parity/comparator/error_pictures.py (its text
// is built in) in one Python worker (runtime/python_worker.h) started for the run; each output pair
// crosses in shared memory. docs/pictures.md says where Parity differs (rank 0/1, NaN/Inf).
#pragma once

#include <memory>
#include <string>

#include "parity/compare/compare_func.h"

namespace parity::runtime {
class PythonWorker;
}

namespace parity::compare {

struct ErrorPictureOptions {
  std::string save_heatmaps;            // a folder; empty: none saved
  bool show_heatmaps = false;           // a window per figure, where a display exists
  std::string save_error_metrics_plot;  // a folder; empty: none saved
  bool show_error_metrics_plot = false;
  bool any() const {
    return !save_heatmaps.empty() || show_heatmaps || !save_error_metrics_plot.empty() || show_error_metrics_plot;
  }
};

class ErrorPictures {
 public:
  // `python`: the interpreter (a path, or a name looked up on PATH); empty: configured_python().
  explicit ErrorPictures(ErrorPictureOptions options, std::string python = {});
  ~ErrorPictures();
  ErrorPictures(const ErrorPictures&) = delete;
  ErrorPictures& operator=(const ErrorPictures&) = delete;

  // Starts the worker and checks that it imports numpy and matplotlib (else Error naming the Python
  // and the package to install). Without a display, a window asked for is announced as impossible
  // (one warning) and not attempted. Before anything runs, so a missing matplotlib fails fast.
  void start();

  // Draws the pictures of one compared pair (start()s first when needed), logging Polygraphy's
  // "Saving ... to: '...'" lines. A pair that cannot be drawn (a dtype numpy lacks, a plotting
  // error) is a warning, and the run goes on.
  void draw(const ComparedPair& pair);

  // draw() as SimpleOptions::on_compared; this object must outlive the comparison.
  ComparedPairObserver observer() {
    return [this](const ComparedPair& pair) { draw(pair); };
  }

 private:
  ErrorPictureOptions options_;
  std::string python_;
  std::unique_ptr<runtime::PythonWorker> worker_;
};

}  // namespace parity::compare
