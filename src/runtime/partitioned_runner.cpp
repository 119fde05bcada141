#include "parity/runtime/partitioned_runner.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "parity/core/error.h"

namespace parity::runtime {
namespace {

// The names the part's runner knows its inputs by, in the part's input order. A backend may name an
// input after a tensor its transformations merged into it (OpenVINO: x * 0.5 * 2 removed leaves the
// input named after the product), so where the runner's names differ from the subgraph's, inputs are
// matched by position (the subgraph keeps the order of its inputs, and so do the runners).
std::vector<std::string> runner_input_names(const std::string& partitioned, Runner& runner, const ModelPart& part) {
  const TensorMetadata metadata = runner.input_metadata();
  if (std::all_of(part.inputs.begin(), part.inputs.end(),
                  [&](const std::string& name) { return metadata.contains(name); }))
    return part.inputs;
  if (metadata.size() != part.inputs.size())
    raise<Error>("{}: {} reads {} tensor(s) ({}) but {} has {} input(s)", partitioned, part.description,
                 part.inputs.size(),
                 fmt::join(part.inputs, ", "), runner.name(), metadata.size());
  std::vector<std::string> names;
  for (const auto& [name, info] : metadata) names.push_back(name);
  return names;
}

}  // namespace

PartitionedRunner::PartitionedRunner(std::string_view name_prefix, std::function<Partitioning()> partition,
                                     PartBuild build)
    : Runner(name_prefix), partition_(std::move(partition)), build_(build) {}

PartitionedRunner::~PartitionedRunner() {
  for (auto& stage : stages_)
    if (stage.runner && stage.runner->is_active()) stage.runner->deactivate();
}

void PartitionedRunner::build(std::size_t index, const NamedTensors& inputs) {
  Stage& stage = stages_[index];
  if (stage.runner && stage.runner->is_active()) stage.runner->deactivate();
  stage.runner = model_.parts[index].make_runner(inputs);
  stage.input_names = runner_input_names(name(), *stage.runner, model_.parts[index]);
}

void PartitionedRunner::activate_impl() {
  stages_.clear();
  model_ = partition_();
  stages_.resize(model_.parts.size());
  if (build_ == PartBuild::kAtActivation)
    for (std::size_t index = 0; index < model_.parts.size(); ++index) build(index, {});
}

void PartitionedRunner::deactivate_impl() {
  for (auto& stage : stages_)
    if (stage.runner && stage.runner->is_active()) stage.runner->deactivate();
  stages_.clear();
}

TensorMetadata PartitionedRunner::input_metadata_impl() { return model_.inputs; }

NamedTensors PartitionedRunner::infer_impl(const NamedTensors& feed) {
  std::unordered_map<std::string, Tensor> values;
  for (const auto& [name, tensor] : feed) values.emplace(name, tensor);
  const std::set<std::string> graph_outputs(model_.outputs.begin(), model_.outputs.end());
  NamedTensors intermediates;
  for (std::size_t index = 0; index < model_.parts.size(); ++index) {
    const ModelPart& part = model_.parts[index];
    Stage& stage = stages_[index];
    NamedTensors inputs;
    for (const auto& name : part.inputs) {
      auto found = values.find(name);
      if (found == values.end())
        raise<InternalError>("{}: tensor '{}' that {} reads was produced by no earlier subgraph", this->name(), name,
                             part.description);
      inputs.emplace_back(name, found->second);
    }
    if (build_ == PartBuild::kPerInputShapes) {
      std::vector<Shape> shapes;
      for (const auto& [name, tensor] : inputs) shapes.push_back(tensor.shape());
      if (!stage.runner || shapes != stage.input_shapes) {
        build(index, inputs);
        stage.input_shapes = std::move(shapes);
      }
    }
    const std::set<std::string> own(part.produced.begin(), part.produced.end());
    // Intermediates: each part returns those its own nodes produce.
    if (intermediates_.mode == IntermediateOutputs::Mode::kAll) {
      stage.runner->set_intermediate_outputs(IntermediateOutputs::all());
    } else if (intermediates_.mode == IntermediateOutputs::Mode::kList) {
      std::vector<std::string> names;
      for (const auto& name : intermediates_.names)
        if (own.count(name)) names.push_back(name);
      stage.runner->set_intermediate_outputs(names.empty() ? IntermediateOutputs::none()
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
    for (std::size_t input = 0; input < inputs.size(); ++input) inputs[input].first = stage.input_names[input];
    for (auto& [name, tensor] : stage.runner->infer(inputs)) {
      if (intermediates_.mode != IntermediateOutputs::Mode::kNone && own.count(name) && !graph_outputs.count(name) &&
          !values.count(name))
        intermediates.emplace_back(name, tensor);
      values.insert_or_assign(name, std::move(tensor));
    }
  }
  NamedTensors results;
  for (const auto& name : model_.outputs) {
    auto found = values.find(name);
    if (found == values.end())
      raise<Error>("{}: graph output '{}' was produced by no subgraph (a constant output)", this->name(), name);
    results.emplace_back(name, found->second);
  }
  for (auto& entry : intermediates) results.push_back(std::move(entry));
  return results;
}

}  // namespace parity::runtime
