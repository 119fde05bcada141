#include "parity/debug/precision_split.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/precision_keep_list.h"

namespace parity::debug {
namespace {


// Graph inputs that are not initializers: the values a feed gives.
std::unordered_set<std::string> fed_inputs(const ::onnx::GraphProto& graph) {
  std::unordered_set<std::string> initializers, fed;
  for (const auto& tensor : graph.initializer()) initializers.insert(tensor.name());
  for (const auto& value : graph.input())
    if (!initializers.count(value.name())) fed.insert(value.name());
  return fed;
}

void add_once(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

}  // namespace

SplitSearchSpace split_search_space(const onnx::Model& fp32, const std::vector<std::string>& keep_fp32) {
  const auto& graph = fp32->graph();
  onnx::PrecisionKeepList keep_list;
  keep_list.add_all(keep_fp32);
  // A node depends on a graph input when something it reads does (directly or not).
  std::unordered_set<std::string> dynamic = fed_inputs(graph);
  SplitSearchSpace space;
  for (int index : onnx::topological_order(graph)) {
    const auto& node = graph.node(index);
    const auto reads = onnx::node_reads(node);
    const bool kept = keep_list.matches(node);
    if (std::none_of(reads.begin(), reads.end(), [&](const std::string& name) { return dynamic.count(name) > 0; }))
      continue;
    for (const auto& output : node.output())
      if (!output.empty()) dynamic.insert(output);
    std::string name = node.name();
    if (name.empty())
      name = fmt::format("(unnamed {} '{}')", node.op_type(), node.output_size() > 0 ? node.output(0) : "");
    if (kept) space.always_kept.push_back(space.nodes.size());
    space.nodes.push_back({std::move(name), node.op_type()});
    space.node_indices.push_back(index);
  }
  if (auto unmatched = keep_list.unmatched(); !unmatched.empty())
    raise<InvalidInputError>("--keep-fp32: {} matches no node of {} that depends on a graph input",
                             onnx::PrecisionKeepList::describe(*unmatched.front()), fp32.path.string());
  return space;
}

std::vector<SplitSegment> split_segments(const onnx::Model& fp32, const SplitSearchSpace& space,
                                         const std::vector<std::size_t>& kept) {
  const auto& graph = fp32->graph();
  std::set<std::size_t> high(kept.begin(), kept.end());
  high.insert(space.always_kept.begin(), space.always_kept.end());
  std::vector<SplitSegment> runs;
  for (std::size_t position = 0; position < space.nodes.size(); ++position) {
    const bool is_high = high.count(position) > 0;
    if (runs.empty() || runs.back().high_precision != is_high) runs.push_back({position, position, is_high, {}, {}});
    else runs.back().last = position;
  }
  const auto fed = fed_inputs(graph);
  std::unordered_map<std::string, std::size_t> producing_run;
  for (std::size_t run = 0; run < runs.size(); ++run)
    for (std::size_t position = runs[run].first; position <= runs[run].last; ++position)
      for (const auto& output : graph.node(space.node_indices[position]).output())
        if (!output.empty()) producing_run[output] = run;
  std::unordered_set<std::string> read_later;  // tensors some run reads from an earlier one
  for (std::size_t run = 0; run < runs.size(); ++run) {
    for (std::size_t position = runs[run].first; position <= runs[run].last; ++position) {
      for (const auto& name : onnx::node_reads(graph.node(space.node_indices[position]))) {
        auto producer = producing_run.find(name);
        if (fed.count(name) || (producer != producing_run.end() && producer->second < run)) {
          add_once(runs[run].inputs, name);
          read_later.insert(name);
        }
      }
    }
  }
  std::unordered_set<std::string> graph_outputs;
  for (const auto& value : graph.output()) graph_outputs.insert(value.name());
  std::vector<SplitSegment> segments;
  for (auto& run : runs) {
    for (std::size_t position = run.first; position <= run.last; ++position)
      for (const auto& output : graph.node(space.node_indices[position]).output())
        if (!output.empty() && (read_later.count(output) || graph_outputs.count(output))) add_once(run.outputs, output);
    if (!run.outputs.empty()) segments.push_back(std::move(run));
  }
  return segments;
}

SplitPrecisionRunner::SplitPrecisionRunner(onnx::Model fp32, std::vector<SplitSegment> segments,
                                           PrecisionRunnerFactory make_runner)
    : runtime::PartitionedRunner("split-runner", [this] { return partition(); },
                                 runtime::PartBuild::kPerInputShapes),
      fp32_(std::move(fp32)),
      segments_(std::move(segments)),
      make_runner_(std::move(make_runner)) {}

runtime::Partitioning SplitPrecisionRunner::partition() const {
  runtime::Partitioning partitioning;
  partitioning.inputs = onnx::graph_inputs(fp32_->graph());
  for (const auto& output : fp32_->graph().output()) partitioning.outputs.push_back(output.name());
  for (const auto& segment : segments_) {
    runtime::ModelPart part;
    part.description = fmt::format("the subgraph from node {} on", segment.first);
    part.inputs = segment.inputs;
    part.produced = segment.outputs;
    part.make_runner = [this, &segment](const NamedTensors& inputs) { return build_segment(segment, inputs); };
    partitioning.parts.push_back(std::move(part));
  }
  return partitioning;
}

std::unique_ptr<runtime::Runner> SplitPrecisionRunner::build_segment(const SplitSegment& segment,
                                                                     const NamedTensors& values) const {
  onnx::Model part{std::make_shared<::onnx::ModelProto>(*fp32_.proto), fp32_.path, fp32_.base_dir};
  std::vector<onnx::ExtractTensor> inputs, outputs;
  for (const auto& [name, tensor] : values) {
    std::vector<Dim> dims;
    for (int64_t extent : tensor.shape()) dims.push_back(Dim::fixed(extent));
    inputs.push_back({name, tensor.dtype(), std::move(dims)});
  }
  for (const auto& name : segment.outputs) outputs.push_back({name, std::nullopt, std::nullopt});
  onnx::extract_subgraph(*part, inputs, outputs);
  log::verbose("{}: subgraph of nodes {}-{} ({} precision) reads {} and gives {}", name(), segment.first, segment.last,
               segment.high_precision ? "higher" : "lower", fmt::join(segment.inputs, ", "),
               fmt::join(segment.outputs, ", "));
  auto runner = make_runner_([part] { return part; }, segment.high_precision);
  runner->activate();
  return runner;
}

std::string describe_segments(const std::vector<SplitSegment>& segments, const SplitSearchSpace& space,
                              const std::string& high_label, const std::string& low_label) {
  std::vector<std::string> parts;
  for (const auto& segment : segments) {
    const std::size_t count = segment.last - segment.first + 1;
    parts.push_back(fmt::format("{}: {} node(s) '{}'{}", segment.high_precision ? high_label : low_label, count,
                                space.nodes[segment.first].name,
                                count > 1 ? fmt::format(" .. '{}'", space.nodes[segment.last].name) : ""));
  }
  return fmt::format("{}", fmt::join(parts, " | "));
}

}  // namespace parity::debug
