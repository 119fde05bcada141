// OpenvinoRunner::profile_layers: per-layer times from OpenVINO's performance counters
// (ov::InferRequest::get_profiling_info, layers with status EXECUTED). A runner compiled without
// ov::enable_profiling compiles (or imports) its model again with it first; each layer's kernel
// (exec_type), its runtime precision and the ONNX nodes fused into it come from the engine report
// (openvino_engine_report.h: originalLayersNames mapped to ONNX nodes, and nodes attributed by
// dataflow). The first profiled inference is left out; each layer keeps its median time.
#include <map>

#include "openvino_backend.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {

LayerProfile OpenvinoRunner::profile_layers(const NamedTensors& feed, int inferences) {
  if (!profiling_ && options_.profile_layers == 0) {
    profiling_ = true;
    if (!options_.compiled_file.empty()) import_compiled_file(read_openvino_compiled_file(options_.compiled_file));
    else compile(marked_outputs(), /*announce=*/false);
  }
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

  LayerProfile profile;
  std::map<std::string, std::size_t> index_of;
  std::vector<std::vector<double>> samples;  // per layer, one per profiled inference
  for (int i = 0; i <= inferences; ++i) {
    infer(feed);
    if (i == 0) continue;
    for (auto& timing : compiled_->layer_timings()) {
      auto [it, added] = index_of.emplace(timing.name, profile.layers.size());
      if (added) {
        runtime::LayerTime layer;
        layer.name = timing.name;
        layer.layer_type = timing.layer_type;
        layer.kernel = timing.kernel;
        if (auto found = described.find(timing.name); found != described.end()) {
          layer.precision = found->second->runtime_precision;
          layer.onnx_nodes = found->second->onnx_nodes;
          layer.onnx_nodes.insert(layer.onnx_nodes.end(), found->second->dataflow_nodes.begin(),
                                  found->second->dataflow_nodes.end());
        }
        profile.layers.push_back(std::move(layer));
        samples.emplace_back();
      }
      samples[it->second].push_back(static_cast<double>(timing.real_time_us) * 1e-6);
    }
  }
  for (std::size_t i = 0; i < samples.size(); ++i) profile.layers[i].seconds = median_of(std::move(samples[i]));
  profile.source = "OpenVINO's performance counters";
  profile.inferences = inferences;
  profile.outside =
      "setting the input tensors, starting and waiting for the infer request, handing the outputs back, and the "
      "plugin's scheduling between layers; layers OpenVINO did not execute (optimized out) count nothing";
  return profile;
}

}  // namespace parity::runtime
