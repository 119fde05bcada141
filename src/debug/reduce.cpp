// debug reduce: the values candidates are fed from, and the reduction itself (the check of the whole model,
// then one of the two algorithms: reduce_marking.cpp, reduce_neighbourhood.cpp); see parity/debug/reduce.h.
#include "parity/debug/reduce.h"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/ref/interpreter.h"
#include "reduce_graph.h"

namespace parity::debug {

TensorValues run_full_model(const onnx::Model& model, const std::vector<NamedTensors>& feeds) {
  runtime::Interpreter interpreter(model, runtime::InterpreterOptions{});
  TensorValues values;
  for (const auto& feed : feeds) {
    runtime::NamedValues inputs;
    auto& sample = values.emplace_back();
    for (const auto& [name, tensor] : feed) {
      inputs.emplace_back(name, ops::Value::of(tensor));
      sample.emplace(name, tensor);
    }
    for (auto& [name, value] : interpreter.run(inputs, runtime::IntermediateOutputs::all()))
      if (value.is_tensor()) sample.insert_or_assign(name, value.tensor());
  }
  return values;
}

std::vector<NamedTensors> candidate_feeds(const onnx::Model& candidate, const TensorValues& values) {
  std::set<std::string> initializers;
  for (const auto& initializer : candidate->graph().initializer()) initializers.insert(initializer.name());
  std::vector<NamedTensors> feeds;
  for (const auto& sample : values) {
    auto& feed = feeds.emplace_back();
    for (const auto& input : candidate->graph().input()) {
      if (initializers.count(input.name())) continue;
      auto it = sample.find(input.name());
      if (it == sample.end())
        raise<InvalidInputError>("no value for the candidate's input '{}' in the run of the whole model",
                                 input.name());
      feed.emplace_back(input.name(), it->second);
    }
  }
  return feeds;
}

namespace {

// ReduceOptions::probe_when_every_check_fails: the last node (in topological order) that is not in the
// result, alone, its inputs marked as the graph inputs: a candidate without the failure the reduction found.
void probe_outside_node(const reduce_internal::PreparedGraph& graph, reduce_internal::CandidateChecks& checks,
                        ReduceResult& result) {
  std::set<std::string> kept;
  for (const auto& node : result.reduced->graph().node()) kept.insert(node.output().begin(), node.output().end());
  for (int index = graph.size() - 1; index >= 0; --index) {
    auto outputs = graph.outputs_of(index);
    if (outputs.empty() ||
        std::any_of(outputs.begin(), outputs.end(), [&](const std::string& tensor) { return kept.count(tensor); }))
      continue;
    const bool freeze = checks.options().freeze_cut_branches;
    auto candidate = graph.mark(graph.variable_inputs_of(index), outputs, freeze);
    if (candidate.nodes.empty()) continue;
    std::optional<onnx::Model> model;
    try {
      model = graph.build(candidate, freeze);
    } catch (const InvalidInputError& error) {  // a tensor the run gave no value (a sequence): the next node
      log::verbose("{} cannot be checked alone: {}", graph.describe(index), error.what());
      continue;
    }
    result.outside_node = graph.describe(index);
    result.outside_node_fails = checks.fails(
        fmt::format("probe@{}", index),
        fmt::format("every candidate failed: checking {} alone, outside the result", result.outside_node),
        static_cast<int>(candidate.nodes.size()), static_cast<int>(candidate.outputs.size()), [&] { return *model; });
    return;
  }
}

}  // namespace

ReduceResult reduce(const onnx::Model& model, const TensorValues& values, const FailureCheck& check,
                    const ReduceOptions& options) {
  using namespace reduce_internal;
  PreparedGraph graph(model, values);
  CandidateChecks checks(graph, check, options);
  const int total = graph.size();
  std::vector<int> all(static_cast<std::size_t>(total));
  for (int i = 0; i < total; ++i) all[i] = i;
  const auto outputs = graph.graph_outputs();
  // Polygraphy never checks the whole model: it searches anyway and keeps the smallest candidate seen
  // failing, or the whole model when none fails. Parity checks it first, says so, and does the same
  // unless the caller asked for a failing model.
  const bool whole_model_passes =
      !checks.fails("full", "the whole model", total, static_cast<int>(outputs.size()), [&] {
        std::vector<std::string> frozen;
        onnx::Model whole = graph.build(all, outputs, nullptr, options.freeze_cut_branches, &frozen);
        announce_frozen(options, frozen);
        return whole;
      });
  if (whole_model_passes) {
    if (options.require_failing_model)
      raise<InvalidInputError>("the check passes on the whole model ({} nodes): there is no failure to reduce",
                               total);
    log::warning("The check passes on the whole model ({} nodes): there is no failure to reduce. Going on as "
                 "Polygraphy does: the reduced model is the smallest candidate that fails the check, or the whole "
                 "model (which passes) if none does",
                 total);
  }
  ReduceResult result = options.reduce_neighbourhood ? reduce_by_neighbourhood(graph, checks, whole_model_passes)
                                                     : reduce_by_marking(graph, checks, whole_model_passes);
  result.whole_model_passes = whole_model_passes;
  result.every_check_failed =
      checks.checks_run() > 0 && checks.checks_replayed() == 0 && checks.checks_failed() == checks.checks_run();
  if (result.every_check_failed && options.probe_when_every_check_fails) probe_outside_node(graph, checks, result);
  result.original_nodes = total;
  result.checks_run = checks.checks_run();
  result.checks_replayed = checks.checks_replayed();
  return result;
}

}  // namespace parity::debug
