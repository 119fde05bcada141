// OnnxrtRunner::profile_layers: per-layer times from ONNX Runtime's profiler. A second session of
// the same model with the same options, profiling on, runs the feed; its Chrome-trace file's node
// events ("<node>_kernel_time", category "Node") give each node's time per run (the mean over the
// runs is kept), and its "model_run" events the session's own time of each run; Parity's clock times each
// run as a whole. The first run (allocations, kernel set-up) is left out.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ort_session.h"
#include "parity/core/error.h"
#include "parity/core/temporary_folder.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime {

namespace {

constexpr std::string_view kKernelTime = "_kernel_time";

struct RunSpan {
  int64_t start = 0, end = 0;
};

// The ONNX node a profiled node stands for: the node of that name, else the longest node name the
// profiled name starts with before a '/' or '_', a "fused " prefix dropped (ONNX Runtime names the nodes its fusions
// make after the first node they fuse: "<node>/MatMulScaleFusion/", "fused <node>/MatMulAddFusion");
// none for a node of ONNX Runtime's own (layout reorders).
std::vector<std::string> onnx_nodes_of(std::string name, const std::set<std::string>& nodes) {
  if (nodes.count(name)) return {name};
  constexpr std::string_view kFused = "fused ";
  if (name.rfind(kFused, 0) == 0) name.erase(0, kFused.size());
  if (nodes.count(name)) return {name};
  // The longest node name followed in `name` by '/' or '_' (a fusion's suffix).
  for (std::size_t end = name.size(); end > 0; --end) {
    if (name[end - 1] != '/' && name[end - 1] != '_') continue;
    if (nodes.count(name.substr(0, end - 1))) return {name.substr(0, end - 1)};
  }
  return {};
}

}  // namespace

LayerProfile OnnxrtRunner::profile_layers(const NamedTensors& feed, int inferences) {
  LayerProfile profile;
  auto& impl = session_->impl();
  if (!impl.model_loader) {
    profile.unavailable = "the ONNX Runtime session was made elsewhere, so no profiled twin of it can be made";
    return profile;
  }
  TemporaryFolder folder("parity-ort-profile", "ONNX Runtime's per-layer profile");
  OnnxrtOptions options = impl.options;
  options.profile_prefix = (folder.path() / "profile").string();
  auto profiled = session_from_model(impl.model_loader, options);
  using Clock = std::chrono::steady_clock;
  // The profiled runs, then as many runs of the runner's own (unprofiled) session, timed alike: the
  // profiler's own cost is the difference of their medians. (Not interleaved run by run: each
  // session has a thread pool of its own, whose threads spin a while after each run and would take
  // the cores from the other session's run.)
  auto timed = [&feed](auto& session) {
    const auto before = Clock::now();
    session.run(feed);
    return std::chrono::duration<double>(Clock::now() - before).count();
  };
  for (int i = 0; i <= inferences; ++i) {
    const double seconds = timed(*profiled);
    if (i > 0) profile.latencies.push_back(seconds);
  }
  for (int i = 0; i <= inferences; ++i) {
    const double seconds = timed(*session_);
    if (i > 0) profile.unprofiled_latencies.push_back(seconds);
  }
  const std::string path = profiled->impl().session->end_profiling();
  std::ifstream file(path);
  nlohmann::json events;
  try {
    events = nlohmann::json::parse(file);
  } catch (const nlohmann::json::exception& error) {
    raise<FileError>("{}: ONNX Runtime's profile is not JSON ({})", path, error.what());
  }
  std::vector<RunSpan> runs;
  for (const auto& event : events)
    if (event.value("cat", "") == "Session" && event.value("name", "") == "model_run") {
      int64_t ts = event.value("ts", int64_t{0});
      runs.push_back({ts, ts + event.value("dur", int64_t{0})});
    }
  std::sort(runs.begin(), runs.end(), [](const RunSpan& a, const RunSpan& b) { return a.start < b.start; });
  // Events of the first run are left out.
  const int64_t first_end = runs.empty() ? 0 : runs.front().end;
  const double profiled_runs = static_cast<double>(runs.size() > 1 ? runs.size() - 1 : 1);
  std::vector<double> run_samples;
  for (std::size_t i = 1; i < runs.size(); ++i) run_samples.push_back(static_cast<double>(runs[i].end - runs[i].start) * 1e-6);
  profile.run_seconds = mean_of(run_samples);

  std::set<std::string> nodes;
  if (auto model = impl.model_loader(); model.proto)
    for (const auto& node : model->graph().node()) nodes.insert(node.name());
  std::map<std::string, std::size_t> index_of;
  std::size_t node_events = 0;
  for (const auto& event : events) {
    if (event.value("cat", "") != "Node" || event.value("ts", int64_t{0}) < first_end) continue;
    ++node_events;
    std::string name = event.value("name", "");
    if (name.size() <= kKernelTime.size() || name.compare(name.size() - kKernelTime.size(), kKernelTime.size(), kKernelTime) != 0)
      continue;
    name.resize(name.size() - kKernelTime.size());
    auto [it, added] = index_of.emplace(name, profile.layers.size());
    if (added) {
      LayerTime layer;
      layer.name = name;
      const auto& args = event.value("args", nlohmann::json::object());
      layer.layer_type = args.value("op_name", "");
      layer.kernel = args.value("provider", "");
      // output_type_shape: [{"float": [dims]}, ...]: the first output's element type.
      if (auto shapes = args.find("output_type_shape"); shapes != args.end() && shapes->is_array() &&
                                                         !shapes->empty() && (*shapes)[0].is_object() &&
                                                         !(*shapes)[0].empty())
        layer.precision = (*shapes)[0].begin().key();
      layer.onnx_nodes = onnx_nodes_of(name, nodes);
      profile.layers.push_back(std::move(layer));
    }
    profile.layers[it->second].seconds += static_cast<double>(event.value("dur", int64_t{0})) * 1e-6 / profiled_runs;
  }
  double kernels = 0;
  for (const auto& layer : profile.layers) kernels += layer.seconds;
  profile.source = "ONNX Runtime's profiler node events";
  profile.inferences = static_cast<int>(runs.size() > 0 ? runs.size() - 1 : 0);
  profile.events_per_inference = static_cast<int>(static_cast<double>(node_events) / profiled_runs + 0.5);
  profile.outside_times = {
      {"between the kernels, inside ONNX Runtime's run",
       fmt::format("the executor's scheduling, allocating each node's outputs, the profiler's recording of each "
                   "node's event, and what it cuts off each event: its duration in whole microseconds, up to 1 us "
                   "per node and inference ({} nodes: up to {:.4g} ms)",
                   profile.layers.size(), 1e-3 * static_cast<double>(profile.layers.size())),
       profile.run_seconds - kernels},
      {"outside ONNX Runtime's run",
       "binding the inputs and outputs (wrapped, not copied) and handing the outputs back",
       mean_of(profile.latencies) - profile.run_seconds}};
  profile.outside =
      "the executor's scheduling, output allocation and the profiler's own recording between the kernels (inside "
      "ONNX Runtime's model_run event), and binding the inputs and outputs outside it";
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  return profile;
}

}  // namespace parity::runtime
