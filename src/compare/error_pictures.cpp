// Heatmaps and error metrics plots of `simple`'s comparisons, drawn in a Python worker
// (parity/compare/error_pictures.h).
#include "parity/compare/error_pictures.h"

#include <fmt/format.h>

#include "error_pictures_source.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/python_interpreter.h"
#include "parity/runtime/python_worker.h"

namespace parity::compare {
namespace {

// The worker's commands over error_pictures.py's functions.
constexpr const char* kCommands = R"PY(
@command("check")
def _check(arguments, tensors):
    import matplotlib
    import numpy
    return {"matplotlib": matplotlib.__version__, "no_display": display_available()}


@command("draw")
def _draw(arguments, tensors):
    return draw(tensors["out0"], tensors["out1"], **arguments)
)PY";

}  // namespace

ErrorPictures::ErrorPictures(ErrorPictureOptions options, std::string python)
    : options_(std::move(options)), python_(python.empty() ? configured_python() : std::move(python)) {}

ErrorPictures::~ErrorPictures() = default;

void ErrorPictures::start() {
  if (worker_) return;
  runtime::PythonWorkerOptions worker_options;
  worker_options.name = "the heatmaps and error metrics plots";
  worker_options.interpreter = python_;
  worker_options.commands = std::string(kErrorPicturesSource) + kCommands;
  worker_ = std::make_unique<runtime::PythonWorker>(worker_options);
  nlohmann::json checked;
  try {
    checked = worker_->call("check").result;
  } catch (const runtime::PythonCommandError& error) {
    raise<Error>("Heatmaps and error metrics plots are drawn with matplotlib by the Python Parity uses ({}), which "
                 "cannot: {}; install matplotlib there (the version scripts/requirements.txt pins) or name another "
                 "Python with {}",
                 python_, error.message(), kPythonEnvironmentVariable);
  }
  log::verbose("Drawing pictures with matplotlib {} in {}", checked["matplotlib"].get<std::string>(), python_);
  if (checked["no_display"].is_string() && (options_.show_heatmaps || options_.show_error_metrics_plot)) {
    log::warning("{}: cannot open a window: {}; save the pictures instead (--save-heatmaps, "
                 "--save-error-metrics-plot)",
                 options_.show_heatmaps && options_.show_error_metrics_plot ? "--show-heatmaps, --show-error-metrics-plot"
                 : options_.show_heatmaps                                    ? "--show-heatmaps"
                                                                             : "--show-error-metrics-plot",
                 checked["no_display"].get<std::string>());
    options_.show_heatmaps = options_.show_error_metrics_plot = false;
  }
}

void ErrorPictures::draw(const ComparedPair& pair) {
  if (!options_.any()) return;
  start();
  nlohmann::json arguments = {
      {"runner0", pair.runner0},
      {"runner1", pair.runner1},
      {"name0", pair.name0},
      {"name1", pair.name1},
      {"save_heatmaps", options_.save_heatmaps.empty() ? nlohmann::json() : nlohmann::json(options_.save_heatmaps)},
      {"show_heatmaps", options_.show_heatmaps},
      {"save_error_metrics_plot", options_.save_error_metrics_plot.empty()
                                      ? nlohmann::json()
                                      : nlohmann::json(options_.save_error_metrics_plot)},
      {"show_error_metrics_plot", options_.show_error_metrics_plot},
      {"infinities_compare_equal", pair.infinities_compare_equal},
  };
  NamedTensors tensors;
  tensors.emplace_back("out0", Tensor::copy_of(pair.out0));
  tensors.emplace_back("out1", Tensor::copy_of(pair.out1));
  try {
    auto reply = worker_->call("draw", arguments, tensors);
    for (const auto& entry : reply.result) {
      const auto severity = entry[0].get<std::string>();
      const auto message = entry[1].get<std::string>();
      if (severity == "warning")
        log::warning("{}", message);
      else
        log::info("{}", message);
    }
  } catch (const UnsupportedError& error) {
    log::warning("No pictures of output '{}': {}", pair.name0, error.message());
  } catch (const runtime::PythonCommandError& error) {
    log::warning("No pictures of output '{}': drawing them failed: {}", pair.name0, error.message());
  }
}

}  // namespace parity::compare
