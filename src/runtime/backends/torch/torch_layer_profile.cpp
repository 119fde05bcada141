// TorchRunner::profile_layers: per-layer times from PyTorch's profiler, in the worker
// (python/parity/backend/pyt/_torch_layer_profile.py's LayerProfiler: each module's calls less its
// submodules', or the operators where no module hook runs). The worker starts the profiler; this side
// runs the inferences through the runner's own infer(), timing each on Parity's clock, the first left
// out; the worker then stops the profiler and returns the table. As many unprofiled inferences follow,
// so the profiler's own cost is measured beside it. With an ONNX model, each module paired with a tensor
// of the export (onnx/torch_module_pairing.h) names the node producing that tensor.
#include <chrono>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/python_worker.h"
#include "parity/runtime/torch/torch_runner.h"

namespace parity::runtime {

LayerProfile TorchRunner::profile_layers(const NamedTensors& feed, int inferences) {
  if (!worker_) raise<InternalError>("{}: profile_layers on an inactive runner", name());
  using Clock = std::chrono::steady_clock;
  auto timed = [&] {
    const auto before = Clock::now();
    infer(feed);
    return std::chrono::duration<double>(Clock::now() - before).count();
  };
  LayerProfile profile;
  nlohmann::json table;
  worker_->call("profile_layers_start");
  try {
    infer(feed);  // left out: the profiler's start-up
    for (int i = 0; i < inferences; ++i) profile.latencies.push_back(timed());
    table = worker_->call("profile_layers_stop").result;
  } catch (...) {
    if (worker_->alive()) {
      try {
        worker_->call("profile_layers_stop", {{"discard", true}});
      } catch (const Error&) {
        // The first error is the one reported.
      }
    }
    throw;
  }
  for (int i = 0; i < inferences; ++i) profile.unprofiled_latencies.push_back(timed());

  std::map<std::string, std::string> nodes;  // module -> the ONNX node producing its paired tensor
  if (pairings_ && onnx_model_)
    for (const auto& module : pairings_->modules)
      if (module.paired()) nodes.emplace(module.module, module.node);
  double layers = 0;
  for (const auto& entry : table.at("layers")) {
    LayerTime layer;
    layer.name = entry.at("name").get<std::string>();
    layer.layer_type = entry.at("type").get<std::string>();
    layer.kernel = entry.at("kernel").get<std::string>();
    layer.precision = entry.at("precision").get<std::string>();
    layer.seconds = entry.at("seconds").get<double>();
    if (const auto found = nodes.find(layer.name); found != nodes.end() && !found->second.empty())
      layer.onnx_nodes = {found->second};
    layers += layer.seconds;
    profile.layers.push_back(std::move(layer));
  }
  for (const auto& note : table.at("notes")) log::info("{:35} | {}", name(), note.get<std::string>());
  if (profile.layers.empty()) {
    LayerProfile none;
    none.unavailable = "PyTorch's profiler recorded no module call and no operator in the profiled inferences";
    return none;
  }
  profile.source = table.at("source").get<std::string>();
  profile.without_onnx_nodes = !onnx_model_ ? "(no ONNX model)"
                               : table.at("in_no_module_seconds").is_null()
                                   ? "(an operator: not paired with the export)"
                                   : "(not paired with a tensor of the export)";
  profile.inferences = inferences;
  profile.events_per_inference = static_cast<int>(table.at("events_per_inference").get<double>() + 0.5);
  const double latency = mean_of(profile.latencies);
  const bool cuda = table.at("device").get<std::string>() == "cuda";
  if (cuda) {
    profile.outside_times = {
        {"outside the kernels",
         "the host's time around the device's: the request and reply, copying the feed in and launching the "
         "kernels where the device waits for them, the device's gaps between kernels, copying the outputs to the "
         "host and waiting for the device",
         latency - layers}};
    profile.outside =
        "the request and reply, the copies to and from the device, kernel launches the device waited for and its "
        "gaps between kernels";
  } else {
    const double inference = table.at("inference_seconds").get<double>();
    const bool modules = !table.at("in_no_module_seconds").is_null();
    profile.run_seconds = inference;
    profile.outside_times = {
        {"the worker's call",
         "the request to the Python worker and its reply, and handing the outputs back: the call's time outside "
         "the inference's profiler range",
         latency - inference},
        {modules ? "in the inference, in no module" : "in the inference, between the operators",
         modules ? "the inference's own code outside the top module (inference mode, autocast) and the profiler's "
                   "ranges around each module call"
                 : "the code between the operators the profiler names (the interpreter's, or a compiled graph's "
                   "own generated kernels) and the profiler's recording of each operator",
         inference - layers}};
    profile.outside = "the request to the Python worker and its reply, handing the outputs back, and the inference's "
                      "code outside the layers";
  }
  return profile;
}

}  // namespace parity::runtime
