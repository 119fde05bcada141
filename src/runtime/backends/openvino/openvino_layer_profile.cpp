// OpenvinoRunner::profile_layers: per-layer times from OpenVINO's performance counters
// (ov::InferRequest::get_profiling_info, layers with status EXECUTED). A twin of the runner's
// compiled model, compiled (or imported) again with ov::enable_profiling, runs the feed; each
// layer's kernel (exec_type), its runtime precision and the ONNX nodes fused into it come from the
// engine report (openvino_engine_report.h: originalLayersNames mapped to ONNX nodes, and nodes
// attributed by dataflow). The first profiled inference is left out; each layer keeps its mean time
// over the others. After the profiled inferences a model of the same inputs passed through Identity
// nodes runs as many times: the infer request's own time, a part of the time outside the layers.
#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "openvino_backend.h"
#include "parity/core/error.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"
#include "parity/runtime/openvino/openvino_engine_report.h"
#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {

namespace {

// The feed's inputs, each passed on to an output of its own by an Identity node: an inference of it
// is the infer request's own work around any model's layers (setting the input tensors, starting
// and waiting for the request, handing the outputs back), plus one copy of each input.
onnx::Model identity_model(const NamedTensors& feed) {
  auto proto = std::make_shared<::onnx::ModelProto>();
  proto->set_ir_version(8);
  auto* opset = proto->add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  ::onnx::GraphProto& graph = *proto->mutable_graph();
  graph.set_name("infer_request_alone");
  for (const auto& [name, tensor] : feed) {
    auto* input = graph.add_input();
    input->set_name(name);
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(static_cast<int32_t>(tensor.dtype()));
    for (int64_t dim : tensor.shape()) type->mutable_shape()->add_dim()->set_dim_value(dim);
    auto* output = graph.add_output();
    *output = *input;
    output->set_name(name + "/identity");
    auto* node = graph.add_node();
    node->set_op_type("Identity");
    node->set_name(name + "/identity");
    node->add_input(name);
    node->add_output(name + "/identity");
  }
  return onnx::Model{proto, {}, {}, false};
}

}  // namespace

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
  // first) / their count: up to 2 us below the truth per layer and inference (each inference's time
  // truncated, then their mean), never above; a layer's time is not below 0.
  infer(feed);
  std::map<std::string, int64_t> first_us;
  for (const auto& timing : compiled_->layer_timings()) first_us[timing.name] = timing.real_time_us;
  LayerProfile profile;
  std::vector<double> alone_latencies;
  using Clock = std::chrono::steady_clock;
  auto timed = [](Runner& runner, const NamedTensors& input) {
    const auto before = Clock::now();
    runner.infer(input);
    return std::chrono::duration<double>(Clock::now() - before).count();
  };
  for (int i = 0; i < inferences; ++i) profile.latencies.push_back(timed(*this, feed));
  const int64_t all = inferences + 1;
  double layers = 0;
  int executed = 0;
  for (const auto& timing : compiled_->layer_timings()) {
    runtime::LayerTime layer;
    layer.name = timing.name;
    layer.layer_type = timing.layer_type;
    layer.kernel = timing.kernel;
    const auto first = first_us.find(timing.name);
    const int64_t profiled_us = timing.real_time_us * all - (first == first_us.end() ? 0 : first->second);
    layer.seconds = static_cast<double>(std::max<int64_t>(profiled_us, 0)) * 1e-6 / static_cast<double>(inferences);
    layers += layer.seconds;
    ++executed;
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
  // The infer request alone: a runner of the same settings on identity_model(feed) (compiled from
  // it, also for a runner of a compiled model file), its first inference left out, then as many
  // inferences as were profiled, timed alike (after the profiled ones, so that its threads never
  // wait for the profiled model's).
  {
    OpenvinoOptions options = options_;
    options.compiled_file.clear();
    options.outputs = IntermediateOutputs::none();
    options.fused_outputs = false;
    options.exclude_outputs.clear();
    options.min_shapes = options.opt_shapes = options.max_shapes = TensorMetadata{};
    options.profile_layers = 0;
    OpenvinoRunner alone([model = identity_model(feed)] { return model; }, std::move(options));
    ActiveRunner active_alone(alone);
    alone.infer(feed);
    for (int i = 0; i < inferences; ++i) alone_latencies.push_back(timed(alone, feed));
  }
  const double request = mean_of(alone_latencies);
  profile.outside_times = {
      {"the infer request alone",
       "setting the input tensors, starting and waiting for the infer request, handing the outputs back: measured "
       "as an inference of the same inputs each passed to an output by an Identity node, as many after the "
       "profiled ones (with one copy of each input)",
       request},
      {"between the layers",
       fmt::format("the plugin's scheduling between the layers and what OpenVINO's counters cut off: each layer's "
                   "time of each inference in whole microseconds, and their mean since compilation in whole "
                   "microseconds, up to 2 us per executed layer and inference ({} executed: up to {:.4g} ms)",
                   executed, 2e-3 * executed),
       mean_of(profile.latencies) - layers - request}};
  profile.outside =
      "the infer request's own work (setting the input tensors, starting and waiting for it, handing the outputs "
      "back), the plugin's scheduling between the layers and the microseconds the counters cut off; layers "
      "OpenVINO did not execute (optimized out, run in place) count nothing";
  return profile;
}

}  // namespace parity::runtime
