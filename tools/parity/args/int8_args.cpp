#include "args/int8_args.h"

#include <filesystem>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/quantize/qdq_removal.h"
#include "parity/quantize/qdq_version.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::cli {

void Int8Args::add_to(CLI::App& app, const std::string& int8_help, bool keep_fp32_flag) {
  const char* group = "Int8";
  auto* int8 = app.add_flag("--int8", int8_, int8_help)->group(group);
  app.add_option("--calibration-algo", algo_,
                 "Calibration algorithm: entropy (TensorRT's EntropyCalibration2, default), minmax or percentile")
      ->group(group)
      ->needs(int8)
      ->check(CLI::IsMember({"entropy", "minmax", "percentile"}));
  percentile_option_ = app.add_option("--percentile", percentile_,
                                      "Percentile of |x| the percentile algorithm takes as the int8 range "
                                      "(default 99.99)")
                           ->group(group)
                           ->needs(int8);
  app.add_option("--calibration-cache", cache_,
                 "TensorRT calibration cache: read when it exists (no calibration), else written after calibrating")
      ->group(group)
      ->needs(int8);
  app.add_flag("--recalibrate", recalibrate_,
               "For a model that has Q/DQ nodes already: remove them (weights dequantized back to float32) and "
               "quantize the float model again")
      ->group(group)
      ->needs(int8);
  if (keep_fp32_flag)
    app.add_option("--keep-fp32", keep_fp32_,
                   "Nodes to leave unquantized: op types, node:NAME, op:TYPE, re:PATTERN, @FILE (the syntax of "
                   "convert's --keep-fp32)")
        ->group(group)
        ->needs(int8);
}

void Int8Args::parse() const {
  if (!int8_) return;
  if (percentile_option_->count() && algo_ != "percentile")
    raise<InvalidInputError>("--percentile applies to --calibration-algo percentile, not {}", algo_);
  if (!(percentile_ > 0 && percentile_ <= 100))
    raise<InvalidInputError>("--percentile must be in (0, 100], got {}", percentile_);
}

bool Int8Args::calibrates() const {
  std::error_code error;
  return cache_.empty() || !std::filesystem::exists(cache_, error);
}

quantize::QuantizeReport Int8Args::quantize(onnx::Model& model, const std::vector<std::string>& keep_fp32,
                                            const FeedStreamFunc& data_loader) const {
  if (recalibrate_) quantize::remove_qdq(model);
  quantize::QuantizeOptions options;
  options.settings.algo = quantize::parse_calibration_algo(algo_);
  options.settings.percentile = percentile_;
  options.keep_fp32 = keep_fp32;
  options.cache = cache_;
  auto make_runner = [](const onnx::Model& prepared, int intra_op_threads) -> std::unique_ptr<runtime::Runner> {
    runtime::OnnxrtOptions options;
    options.intra_op_spinning = false;  // spinning costs the calibration CPU time, changes no value
    options.intra_op_threads = intra_op_threads;
    return std::make_unique<runtime::OnnxrtRunner>([prepared] { return prepared; }, options);
  };
  return quantize::quantize_model(model, options, make_runner, data_loader);
}

void Int8Args::quantize_runners_under_test(std::vector<std::unique_ptr<runtime::Runner>>& live,
                                           const RunnerArgs& runners, const ModelArgs& model_args,
                                           const compare::DataLoaderFunc& data_loader) {
  if (live.empty()) return;
  if (model_args.path().empty()) raise<InvalidInputError>("--int8 quantizes an ONNX model: give one");
  // Weights are read in full (quantizing reads every one), so not the runners' lazily loaded model.
  auto model = std::make_shared<onnx::Model>(model_args.load());
  quantize(*model, keep_fp32_, [&](const TensorMetadata& inputs) { return feed_stream_of(data_loader(inputs)); });
  quantized_ = model;
  auto quantized = runners.make_runners([model] { return *model; });
  const std::size_t first = live.size() == 1 ? 0 : 1;
  for (std::size_t i = first; i < live.size(); ++i) {
    quantized[i]->set_name(live[i]->name() + "-int8");
    live[i] = std::move(quantized[i]);
  }
  if (first == 1)
    log::info("int8: {} runs the float model (the reference); {} the int8 model", live[0]->name(),
              live.size() == 2 ? live[1]->name() : fmt::format("the {} others", live.size() - 1));
}

std::function<void(onnx::Model&)> Int8Args::qdq_versions() const {
  if (!quantized_) raise<InternalError>("Int8Args::qdq_versions before quantize_runners_under_test");
  return [quantized = quantized_](onnx::Model& model) { quantize::take_qdq_versions(model, *quantized); };
}

}  // namespace parity::cli
