#include "parity/runtime/hybrid_runner.h"

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/node_range.h"

namespace parity::runtime {

HybridRunner::HybridRunner(ModelLoader model,
                           std::function<std::unique_ptr<SupportQuery>()> make_query,
                           HybridBackend primary, HybridBackend fallback)
    : PartitionedRunner(fmt::format("{}+{}-hybrid-runner", primary.label, fallback.label),
                        [this] { return partition(); }, PartBuild::kAtActivation),
      loader_(std::move(model)),
      make_query_(std::move(make_query)),
      primary_(std::move(primary)),
      fallback_(std::move(fallback)) {}

HybridRunner::~HybridRunner() = default;

Partitioning HybridRunner::partition() {
  onnx::Model prepared = prepare_for_partitioning(loader_());
  auto query = make_query_();
  report_ = analyze_capability(prepared, *query);
  const auto& graph = prepared->graph();
  Partitioning partitioning;
  partitioning.inputs = onnx::graph_inputs(graph);
  for (const auto& output : graph.output()) partitioning.outputs.push_back(output.name());
  placements_.clear();
  for (const auto& partition : report_.partitions) {
    const HybridBackend& backend = partition.supported ? primary_ : fallback_;
    onnx::Model part = onnx::extract_node_range(prepared, partition.begin, partition.end);
    ModelPart model_part;
    model_part.description = "the subgraph of " + onnx::describe_node_range(partition.begin, partition.end);
    for (const auto& input : part->graph().input()) model_part.inputs.push_back(input.name());
    Placement placement{partition, backend.label, {}};
    for (int index = partition.begin; index < partition.end; ++index) {
      const auto& node = graph.node(index);
      placement.node_names.push_back(node.name().empty() ? fmt::format("<node {}>", index)
                                                         : node.name());
      for (const auto& output : node.output())
        if (!output.empty()) model_part.produced.push_back(output);
    }
    model_part.make_runner = [this, part, &backend, placement](const NamedTensors&) {
      auto runner = backend.make_runner([part] { return part; });
      runner->activate();
      log::info("{} | {} ({}) run on {}", name(),
                onnx::describe_node_range(placement.partition.begin, placement.partition.end),
                fmt::join(placement.node_names, ", "), backend.label);
      return runner;
    };
    partitioning.parts.push_back(std::move(model_part));
    placements_.push_back(std::move(placement));
  }
  return partitioning;
}

}  // namespace parity::runtime
