#include "parity/quantize/quantize_model.h"

#include <future>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/quantize/calibration_cache.h"
#include "parity/quantize/calibration_threads.h"
#include "parity/quantize/calibrator.h"

namespace parity::quantize {

namespace {

// While alive, the activations to calibrate that are neither graph inputs nor graph outputs are
// graph outputs of `model` (float32, as the plan's activations are), appended after the model's
// own: the runner made from the model returns them with every batch from its one session, instead
// of making a second session with them marked. The destructor removes them again.
class CalibrationOutputs {
 public:
  CalibrationOutputs(onnx::Model& model, const std::vector<std::string>& activations) : model_(model) {
    auto& graph = *model_->mutable_graph();
    original_ = graph.output_size();
    for (const auto& input : graph.input()) returned_.insert(input.name());
    for (const auto& output : graph.output()) returned_.insert(output.name());
    for (const auto& name : activations) {
      if (!returned_.insert(name).second) continue;
      auto* output = graph.add_output();
      output->set_name(name);
      output->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    }
  }
  ~CalibrationOutputs() {
    auto* outputs = model_->mutable_graph()->mutable_output();
    outputs->DeleteSubrange(original_, outputs->size() - original_);
  }
  CalibrationOutputs(const CalibrationOutputs&) = delete;
  CalibrationOutputs& operator=(const CalibrationOutputs&) = delete;

  // Graph inputs and outputs, the added ones included.
  const std::set<std::string>& returned() const { return returned_; }

 private:
  onnx::Model& model_;
  int original_ = 0;
  std::set<std::string> returned_;
};

// The calibration data's stream is opened (the data loader, which may start a Python process for its
// script) on another thread while the runners are activated (ONNX Runtime's library and sessions), as
// many as calibration_threads_here says, on threads of their own; a script's process goes on producing
// its feeds while they are made and while the first feeds run.
CalibrationResult calibrate_model(onnx::Model& model, const std::vector<std::string>& activations,
                                  const CalibrationSettings& settings, const CalibrationRunnerFactory& make_runner,
                                  const CalibrationBatches& batches) {
  const TensorMetadata inputs = onnx::graph_inputs(model->graph());
  auto data = std::async(std::launch::async, [&] { return batches(inputs); });
  CalibrationOutputs outputs(model, activations);
  const CalibrationThreads threads = calibration_threads_here(model->ByteSizeLong());
  log::verbose(
      "calibration: {} session(s) of the model, {} intra-op thread(s) each", threads.workers,
      threads.intra_op_threads == 0 ? std::string("the backend's default") : std::to_string(threads.intra_op_threads));
  // The runners' sessions are created on threads of their own, beside the data loader's.
  std::vector<std::unique_ptr<runtime::Runner>> runners(static_cast<std::size_t>(threads.workers));
  std::vector<std::future<void>> made;
  for (auto& runner : runners)
    made.push_back(std::async(std::launch::async, [&] {
      runner = make_runner(model, threads.intra_op_threads);
      runner->activate();
    }));
  for (auto& one : made) one.get();
  std::vector<runtime::Runner*> pointers;
  for (const auto& runner : runners) pointers.push_back(runner.get());
  std::unique_ptr<FeedStream> stream = data.get();
  return calibrate(pointers, activations, *stream, settings, outputs.returned());
}

}  // namespace

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
    const CalibrationResult result =
        calibrate_model(model, report.plan.activations, options.settings, make_runner, batches);
    scales = result.scales;
    report.calibrated = true;
    log::info("int8: calibrated {} tensor(s) with {} over {} batch(es) in {:.3f} s", scales.size(),
              calibration_algo_flag_name(options.settings.algo), result.batches, result.seconds);
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
