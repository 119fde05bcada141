#include "parity/quantize/calibrator.h"

#include <chrono>
#include <set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::quantize {

float scale_of_amax(double amax) { return amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f; }

namespace {

void check_batch_names(const NamedTensors& batch, const TensorMetadata& inputs, std::size_t index) {
  std::set<std::string> given, expected;
  for (const auto& [name, tensor] : batch) given.insert(name);
  for (const auto& [name, info] : inputs) expected.insert(name);
  if (given == expected) return;
  raise<InvalidInputError>("calibration batch {} has input(s) {} but the model's inputs are {}", index,
                           fmt::join(given, ", "), fmt::join(expected, ", "));
}

}  // namespace

CalibrationResult calibrate(runtime::Runner& runner, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (batches.empty()) raise<InvalidInputError>("calibration: the data loader gave no batches");
  CalibrationResult result;
  for (const auto& name : tensors) result.histograms[name];
  std::set<std::string> seen_this_batch;
  auto fold = [&](const std::string& name, const Tensor& tensor) {
    auto it = result.histograms.find(name);
    if (it == result.histograms.end() || tensor.dtype() != DType::kFloat32) return;
    if (!seen_this_batch.insert(name).second) return;
    it->second.add(tensor.span<float>());
  };

  runtime::ActiveRunner active(runner);
  const TensorMetadata inputs = runner.input_metadata();
  std::vector<std::string> marked;
  std::set<std::string> input_names;
  for (const auto& [name, info] : inputs) input_names.insert(name);
  for (const auto& name : tensors)
    if (!input_names.count(name)) marked.push_back(name);
  runner.set_intermediate_outputs(runtime::IntermediateOutputs::list(marked));
  runner.set_tensor_callback([&](const runtime::ProducedTensor& produced) { fold(produced.name, produced.tensor); });

  auto last_log = start;
  auto log_progress = [&](std::size_t done) {
    std::size_t seen = 0;
    for (const auto& [name, histogram] : result.histograms) seen += histogram.count() > 0;
    log::info("Calibrating: {}/{} batches, {}/{} tensors seen", done, batches.size(), seen, tensors.size());
  };
  for (std::size_t b = 0; b < batches.size(); ++b) {
    check_batch_names(batches[b], inputs, b);
    seen_this_batch.clear();
    for (const auto& [name, tensor] : batches[b]) fold(name, tensor);
    const NamedTensors outputs = runner.infer(batches[b]);
    for (const auto& [name, tensor] : outputs) fold(name, tensor);
    ++result.batches;
    const auto now = Clock::now();
    if (b + 1 == batches.size() || now - last_log >= std::chrono::seconds(1)) {
      log_progress(b + 1);
      last_log = now;
    }
  }
  runner.set_tensor_callback(nullptr);
  runner.set_intermediate_outputs(runtime::IntermediateOutputs::none());

  for (const auto& name : tensors) {
    const AbsHistogram& histogram = result.histograms.at(name);
    if (histogram.count() == 0)
      raise<InvalidInputError>("calibration: no batch reached tensor '{}' ({} batch(es) run): it holds no values; "
                               "exclude its consumers with --keep-fp32",
                               name, batches.size());
    if (histogram.non_finite())
      log::warning("calibration: tensor '{}' had {} NaN or infinite value(s), left out of its statistics", name,
                   histogram.non_finite());
    const double amax = amax_from(histogram, settings);
    if (amax == 0)
      log::warning("calibration: tensor '{}' was zero in every batch; its scale is 1 (a scale of 0 would divide "
                   "by zero)",
                   name);
    result.amax[name] = amax;
    result.scales[name] = scale_of_amax(amax);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace parity::quantize
