#include "parity/runtime/hybrid_runner.h"

#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/node_range.h"

namespace parity::runtime {

HybridRunner::HybridRunner(ModelLoader model,
                           std::function<std::unique_ptr<SupportQuery>()> make_query,
                           HybridBackend primary, HybridBackend fallback)
    : Runner(fmt::format("{}+{}-hybrid-runner", primary.label, fallback.label)),
      loader_(std::move(model)),
      make_query_(std::move(make_query)),
      primary_(std::move(primary)),
      fallback_(std::move(fallback)) {}

HybridRunner::~HybridRunner() = default;

void HybridRunner::activate_impl() {
  onnx::Model prepared = prepare_for_partitioning(loader_());
  auto query = make_query_();
  report_ = analyze_capability(prepared, *query);
  const auto& graph = prepared->graph();
  inputs_ = onnx::graph_inputs(graph);
  graph_outputs_.clear();
  for (const auto& output : graph.output()) graph_outputs_.push_back(output.name());
  stages_.clear();
  placements_.clear();
  for (const auto& partition : report_.partitions) {
    const HybridBackend& backend = partition.supported ? primary_ : fallback_;
    onnx::Model part = onnx::extract_node_range(prepared, partition.begin, partition.end);
    Stage stage;
    for (const auto& input : part->graph().input()) stage.inputs.push_back(input.name());
    Placement placement{partition, backend.label, {}};
    for (int index = partition.begin; index < partition.end; ++index) {
      const auto& node = graph.node(index);
      placement.node_names.push_back(node.name().empty() ? fmt::format("<node {}>", index)
                                                         : node.name());
      for (const auto& output : node.output())
        if (!output.empty()) stage.produced.push_back(output);
    }
    stage.runner = backend.make_runner([part] { return part; });
    stage.runner->activate();
    log::info("{} | {} ({}) run on {}", name(),
              onnx::describe_node_range(partition.begin, partition.end),
              fmt::join(placement.node_names, ", "), backend.label);
    stages_.push_back(std::move(stage));
    placements_.push_back(std::move(placement));
  }
}

void HybridRunner::deactivate_impl() {
  for (auto& stage : stages_)
    if (stage.runner->is_active()) stage.runner->deactivate();
  stages_.clear();
}

TensorMetadata HybridRunner::input_metadata_impl() {
  return inputs_;
}

NamedTensors HybridRunner::infer_impl(const NamedTensors& feed) {
  std::unordered_map<std::string, Tensor> values;
  for (const auto& [name, tensor] : feed) values.emplace(name, tensor);
  std::set<std::string> graph_output_set(graph_outputs_.begin(), graph_outputs_.end());
  NamedTensors intermediates;
  for (auto& stage : stages_) {
    std::set<std::string> own(stage.produced.begin(), stage.produced.end());
    // Intermediates: each subgraph returns those its own nodes produce.
    if (intermediates_.mode == IntermediateOutputs::Mode::kAll) {
      stage.runner->set_intermediate_outputs(IntermediateOutputs::all());
    } else if (intermediates_.mode == IntermediateOutputs::Mode::kList) {
      std::vector<std::string> names;
      for (const auto& name : intermediates_.names)
        if (own.count(name)) names.push_back(name);
      stage.runner->set_intermediate_outputs(names.empty()
                                                 ? IntermediateOutputs::none()
                                                 : IntermediateOutputs::list(std::move(names)));
    } else {
      stage.runner->set_intermediate_outputs(IntermediateOutputs::none());
    }
    if (callback_)
      stage.runner->set_tensor_callback([this, &own](const ProducedTensor& produced) {
        if (own.count(produced.name)) callback_(produced);
      });
    else
      stage.runner->set_tensor_callback(nullptr);
    NamedTensors stage_feed;
    for (const auto& name : stage.inputs) {
      auto found = values.find(name);
      if (found == values.end())
        raise<InternalError>("{}: tensor '{}' that {} reads was produced by no earlier subgraph",
                             this->name(), name, stage.runner->name());
      stage_feed.emplace_back(name, found->second);
    }
    NamedTensors outputs = stage.runner->infer(stage_feed);
    for (auto& [name, tensor] : outputs) {
      if (intermediates_.mode != IntermediateOutputs::Mode::kNone && own.count(name) &&
          !graph_output_set.count(name) && !values.count(name))
        intermediates.emplace_back(name, tensor);
      values.insert_or_assign(name, std::move(tensor));
    }
  }
  NamedTensors results;
  for (const auto& name : graph_outputs_) {
    auto found = values.find(name);
    if (found == values.end())
      raise<InternalError>("{}: no subgraph produced the graph output '{}'", this->name(), name);
    results.emplace_back(name, found->second);
  }
  for (auto& entry : intermediates) results.push_back(std::move(entry));
  return results;
}

}  // namespace parity::runtime
