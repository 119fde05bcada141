#include "parity/quantize/quantize_model.h"

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/quantize/calibration_cache.h"
#include "parity/quantize/calibrator.h"

namespace parity::quantize {

QuantizeReport quantize_model(onnx::Model& model, const QuantizeOptions& options,
                              const CalibrationRunnerFactory& make_runner, const CalibrationBatches& batches) {
  onnx::PrecisionKeepList keep;
  keep.add_all(options.keep_fp32);
  QuantizeReport report;
  report.plan = plan_quantization(model, std::move(keep));
  log::info("int8: {} node(s) to quantize ({} kept in float32 by --keep-fp32), {} activation(s) to calibrate",
            report.plan.nodes.size(), report.plan.nodes_kept, report.plan.activations.size());

  std::map<std::string, float> scales;
  const bool cached = !options.cache.empty() && std::filesystem::exists(options.cache);
  if (cached) {
    const CalibrationCache cache = read_calibration_cache(options.cache, options.settings.algo);
    for (const auto& tensor : report.plan.activations) {
      auto it = cache.scales.find(tensor);
      if (it == cache.scales.end())
        raise<InvalidInputError>("calibration cache {} has no scale for tensor '{}'; delete the cache to recalibrate",
                                 options.cache.string(), tensor);
      scales[tensor] = it->second;
    }
    log::info("int8: scales of {} tensor(s) read from the calibration cache {} (no calibration)", scales.size(),
              options.cache.string());
  } else {
    std::unique_ptr<runtime::Runner> runner = make_runner(model);
    const std::vector<NamedTensors> data = batches(onnx::graph_inputs(model->graph()));
    const CalibrationResult result = calibrate(*runner, report.plan.activations, data, options.settings);
    scales = result.scales;
    report.calibrated = true;
    log::info("int8: calibrated {} tensor(s) with {} over {} batch(es) in {:.3f} s",
              scales.size(), calibration_algo_flag_name(options.settings.algo), result.batches, result.seconds);
    if (!options.cache.empty()) {
      write_calibration_cache(options.cache, {options.settings.algo, scales});
      log::info("int8: wrote the calibration cache {}", options.cache.string());
    }
  }
  report.qdq = insert_qdq(model, report.plan, scales);
  report.scales = std::move(scales);
  log::info("int8: inserted {} activation Q/DQ pair(s), {} weight(s) stored as int8", report.qdq.activation_pairs,
            report.qdq.weights);
  return report;
}

}  // namespace parity::quantize
