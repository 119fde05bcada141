// The int8 flags of `parity convert` and `parity run` (--int8, --calibration-algo, --percentile,
// --calibration-cache, --recalibrate, and run's --keep-fp32), turned into quantize::QuantizeOptions;
// quantize() makes a float model int8 with calibration data from the data loader, and
// quantize_runners_under_test() gives `run`'s runners after the first the int8 model (docs/int8.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "args/model_args.h"
#include "args/runner_args.h"
#include "parity/compare/comparator.h"
#include "parity/onnx/model.h"
#include "parity/quantize/quantize_model.h"

namespace parity::cli {

class Int8Args {
 public:
  // Adds the "Int8" group; `int8_help` is --int8's help (what the command does with it);
  // `keep_fp32_flag`: adds --keep-fp32 too (for a command that has none of its own).
  void add_to(CLI::App& app, const std::string& int8_help, bool keep_fp32_flag = false);
  // Checks the values: the other flags need --int8, --percentile needs the percentile algorithm.
  void parse() const;
  bool enabled() const { return int8_; }
  bool recalibrate() const { return recalibrate_; }
  // Whether quantize() will calibrate (false when --calibration-cache names a file that exists).
  bool calibrates() const;

  // Quantizes `model` in place (float32 -> Q/DQ), calibrating on ONNX Runtime with `data_loader`'s
  // batches unless the calibration cache exists. `keep_fp32`: --keep-fp32's entries.
  quantize::QuantizeReport quantize(onnx::Model& model, const std::vector<std::string>& keep_fp32,
                                    const FeedStreamFunc& data_loader) const;

  // `parity run --int8`: the first runner (command-line order) stays on the float model, the
  // reference; every other runner is made again on the int8 model, quantized once from the model
  // `model_args` names (calibrated with `data_loader`, the run's own). A single runner runs the
  // int8 model (compared with --load-outputs, if given).
  void quantize_runners_under_test(std::vector<std::unique_ptr<runtime::Runner>>& live, const RunnerArgs& runners,
                                   const ModelArgs& model_args, const compare::DataLoaderFunc& data_loader);
  // After quantize_runners_under_test(): gives a model of some of the float model's nodes their Q/DQ
  // versions from the int8 model (quantize::take_qdq_versions), for the attribution's batches.
  std::function<void(onnx::Model&)> qdq_versions() const;

 private:
  bool int8_ = false;
  bool recalibrate_ = false;
  std::string algo_ = "entropy";
  double percentile_ = 99.99;
  std::string cache_;
  std::vector<std::string> keep_fp32_;  // --keep-fp32, when add_to added it
  CLI::Option* percentile_option_ = nullptr;
  std::shared_ptr<const onnx::Model> quantized_;  // the int8 model the runners under test run
};

}  // namespace parity::cli
