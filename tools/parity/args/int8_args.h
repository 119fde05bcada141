// The int8 flags of `parity convert` and `parity run` (--int8, --calibration-algo, --percentile,
// --calibration-cache, --recalibrate), turned into quantize::QuantizeOptions; quantize() makes a
// float model int8 with calibration data from the data loader (docs/int8.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/compare/comparator.h"
#include "parity/onnx/model.h"
#include "parity/quantize/quantize_model.h"

namespace parity::cli {

class Int8Args {
 public:
  // Adds the "Int8" group; `int8_help` is --int8's help (what the command does with it).
  void add_to(CLI::App& app, const std::string& int8_help);
  // Checks the values: the other flags need --int8, --percentile needs the percentile algorithm.
  void parse() const;
  bool enabled() const { return int8_; }

  // Quantizes `model` in place (float32 -> Q/DQ), calibrating on ONNX Runtime with `data_loader`'s
  // batches unless the calibration cache exists. `keep_fp32`: --keep-fp32's entries.
  quantize::QuantizeReport quantize(onnx::Model& model, const std::vector<std::string>& keep_fp32,
                                    const compare::DataLoaderFunc& data_loader) const;

 private:
  bool int8_ = false;
  bool recalibrate_ = false;
  std::string algo_ = "entropy";
  double percentile_ = 99.99;
  std::string cache_;
  CLI::Option* percentile_option_ = nullptr;
};

}  // namespace parity::cli
