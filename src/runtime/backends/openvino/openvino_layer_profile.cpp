// OpenvinoRunner::profile_layers: per-layer times from OpenVINO's performance counters
// (ov::InferRequest::get_profiling_info, layers with status EXECUTED). A runner compiled without
// A twin of the runner's compiled model, compiled (or imported) again with ov::enable_profiling,
// runs the feed; each layer's kernel (exec_type), its runtime precision and the ONNX nodes fused
// into it come from the engine report (openvino_engine_report.h: originalLayersNames mapped to ONNX
// nodes, and nodes attributed by dataflow). The first profiled inference is left out; each layer
// keeps its mean time over the others.
#include <algorithm>
#include <chrono>
#include <map>

#include "openvino_backend.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {

LayerProfile OpenvinoRunner::profile_layers(const NamedTensors& feed, int inferences) {
  // The runner's own compiled model is set aside and restored afterwards, so what is measured after
  // the profile (a shape sweep) runs without the counters; its --ov-profile-layers times are its own.
  std::unique_ptr<openvino::CompiledModel> own = std::move(compiled_);
  const auto own_layer_times = layer_times_;
  const auto own_profiled_inferences = profiled_inferences_;
  const auto own_streams = options_.streams;
  bool one_stream = true;
  for (const auto& [name, value] : own->properties())
    if (name == "NUM_STREAMS") one_stream = value == "1";
  if (!one_stream) options_.streams = 1;
  struct Restore {
    OpenvinoRunner& runner;
    std::unique_ptr<openvino::CompiledModel>& own;
    std::vector<LayerTime> layer_times;
    std::size_t profiled_inferences;
    std::optional<int> streams;
    ~Restore() {
      runner.compiled_ = std::move(own);
      runner.layer_times_ = std::move(layer_times);
      runner.profiled_inferences_ = profiled_inferences;
      runner.options_.streams = streams;
      runner.profiling_ = false;
    }
  } restore{*this, own, own_layer_times, own_profiled_inferences, own_streams};
  profiling_ = true;
  if (!options_.compiled_file.empty()) import_compiled_file(read_openvino_compiled_file(options_.compiled_file));
  else compile(marked_outputs(), /*announce=*/false);

  EngineReport report;
  if (options_.compiled_file.empty()) {
    onnx::Model model = loader_();
    report = describe_openvino_engine(*this, &model);
  } else {
    report = describe_openvino_engine(*this, nullptr);
    if (!compiled_onnx_map_.empty()) report.apply_onnx_map(compiled_onnx_map_, options_.compiled_file);
  }
  std::map<std::string, const EngineLayer*> described;
  for (const auto& layer : report.layers) described.emplace(layer.name, &layer);

  // The first inference (allocations, kernel set-up) is left out. OpenVINO's counters hold each
  // layer's mean over every inference of the compiled model, in whole microseconds truncated, so
  // the mean over the profiled ones is (mean after all of them x (their count + 1) - time of the
  // first) / their count: up to 1 us below the truth per layer, never above; a layer's time is
  // not below 0.
  infer(feed);
  std::map<std::string, int64_t> first_us;
  for (const auto& timing : compiled_->layer_timings()) first_us[timing.name] = timing.real_time_us;
  LayerProfile profile;
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < inferences; ++i) {
    const auto before = Clock::now();
    infer(feed);
    profile.latencies.push_back(std::chrono::duration<double>(Clock::now() - before).count());
  }
  const int64_t all = inferences + 1;
  double layers = 0;
  for (const auto& timing : compiled_->layer_timings()) {
    runtime::LayerTime layer;
    layer.name = timing.name;
    layer.layer_type = timing.layer_type;
    layer.kernel = timing.kernel;
    const auto first = first_us.find(timing.name);
    const int64_t profiled_us = timing.real_time_us * all - (first == first_us.end() ? 0 : first->second);
    layer.seconds = static_cast<double>(std::max<int64_t>(profiled_us, 0)) * 1e-6 / static_cast<double>(inferences);
    layers += layer.seconds;
    if (auto found = described.find(timing.name); found != described.end()) {
      layer.precision = found->second->runtime_precision;
      layer.onnx_nodes = found->second->onnx_nodes;
      layer.onnx_nodes.insert(layer.onnx_nodes.end(), found->second->dataflow_nodes.begin(),
                              found->second->dataflow_nodes.end());
    }
    profile.layers.push_back(std::move(layer));
  }
  profile.source = one_stream ? "OpenVINO's performance counters"
                              : "OpenVINO's performance counters, profiled on one stream (the counters are kept per "
                                "stream, and which stream runs an inference is OpenVINO's choice)";
  profile.inferences = inferences;
  profile.outside_times = {{"outside the layers",
                            "setting the input tensors, starting and waiting for the infer request, the plugin's "
                            "scheduling between layers, handing the outputs back; OpenVINO counts each layer in "
                            "whole microseconds, cutting off up to 1 us per layer and inference",
                            mean_of(profile.latencies) - layers}};
  profile.outside =
      "setting the input tensors, starting and waiting for the infer request, handing the outputs back, and the "
      "plugin's scheduling between layers; layers OpenVINO did not execute (optimized out) count nothing";
  return profile;
}

}  // namespace parity::runtime
