#include "parity/compare/judge.h"

#include <malloc.h>

#include <algorithm>
#include <iterator>

#include "parity/compare/layerwise_review.h"
#include "parity/compare/layerwise_torch_modules.h"
#include "parity/core/error.h"
#include "parity/onnx/passes.h"

namespace parity::compare {

nlohmann::ordered_json Verdict::report(std::size_t worst_count) const {
  // A streamed run keeps its comparisons once, in `layerwise`: the report's accuracy is built from
  // them here, for as long as the report takes.
  std::optional<AccuracyResult> streamed_accuracy;
  if (streamed && !accuracy) {
    streamed_accuracy.emplace();
    for (const auto& result : layerwise) streamed_accuracy->pairs.push_back(result.as_pair());
  }
  const std::optional<AccuracyResult>& shown = streamed_accuracy ? streamed_accuracy : accuracy;
  auto json = make_report(shown ? &*shown : nullptr, validation ? &*validation : nullptr);
  if (!layerwise.empty()) {
    json["layerwise"] = nlohmann::ordered_json::array();
    for (const auto& result : layerwise) json["layerwise"].push_back(to_json(result, worst_count));
  }
  if (!streamed_validation.empty()) {
    json["streamed_validation"] = nlohmann::ordered_json::array();
    for (const auto& checks : streamed_validation) json["streamed_validation"].push_back(checks.to_json());
  }
  json["passed"] = passed;
  return json;
}

Judge::Judge(std::vector<runtime::Runner*> live, RunResults held, JudgeOptions options)
    : live_(std::move(live)), held_(std::move(held)), options_(std::move(options)) {
  if (!options_.comparisons) options_.comparisons = default_comparisons;
  // A caller that gives no model (the Python API) judges the model the first live runner runs.
  for (std::size_t i = 0; i < live_.size() && !options_.model; ++i) options_.model = live_[i]->source_model();
  RunResults names_only(live_.size() + held_.size());
  for (std::size_t i = 0; i < live_.size(); ++i) names_only[i].runner_name = live_[i]->name();
  for (std::size_t i = 0; i < held_.size(); ++i) names_only[live_.size() + i].runner_name = held_[i].runner_name;
  pairs_ = options_.comparisons(names_only);
  // The streamed comparison reads both runners' tensors as they come: in this process only.
  streamed_ = !options_.use_subprocess && layerwise() && !options_.on_results && options_.streamable_simple &&
              live_.size() + held_.size() == 2 && !live_.empty();
}

Verdict Judge::run(const DataLoaderFunc& data_loader) {
  if (ran_) raise<InternalError>("Judge::run: a judge runs once (its held results are moved into the verdict)");
  ran_ = true;
#ifdef __GLIBC__
  // Layerwise runs allocate and free many large tensors; glibc's adaptive mmap threshold would
  // move them onto the heap, whose freed pages stay resident. A fixed threshold returns them.
  if (layerwise()) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
  }
#endif
  Verdict verdict;
  verdict.streamed = streamed_;
  if (streamed_) run_streamed(data_loader, verdict);
  else run_held(data_loader, verdict);
  conclude(verdict);
  return verdict;
}

// Exactly two results, at least one live: compared tensor by tensor. Result slots: live runners
// first (in order), then held results.
void Judge::run_streamed(const DataLoaderFunc& data_loader, Verdict& verdict) {
  LayerwiseRunOptions options;
  options.tensors = options_.tensors;
  // With a list of tensors the graph outputs are compared too (when the model is known).
  if (options_.tensors.mode == runtime::IntermediateOutputs::Mode::kList && options_.model) {
    const onnx::Model model = options_.model();
    for (const auto& output : model->graph().output()) options.graph_outputs.insert(output.name());
  }
  options.exclude = options_.exclude;
  options.simple = *options_.streamable_simple;
  options.postprocess = options_.postprocess;
  options.fail_fast = options_.fail_fast;
  options.validate = options_.validate.has_value();
  options.warm_up = options_.warm_up;
  options.memory_budget = options_.memory_budget;
  options.on_feeds = options_.on_feeds;

  const auto pair = pairs_.at(0);
  RunResults& results = verdict.results;
  results.resize(live_.size() + held_.size());
  for (std::size_t i = 0; i < held_.size(); ++i) results[live_.size() + i] = std::move(held_[i]);
  LayerwiseRun run;
  if (live_.size() == 2) {
    run = Comparator::run_layerwise(*live_[pair.first], *live_[pair.second], data_loader, options);
    results[pair.first] = run.results[0];
    results[pair.second] = run.results[1];
  } else {
    const std::size_t live_slot = pair.first < live_.size() ? pair.first : pair.second;
    const std::size_t held_slot = live_slot == pair.first ? pair.second : pair.first;
    run = Comparator::run_layerwise(*live_[live_slot], results[held_slot], live_slot == pair.first, data_loader,
                                    options);
    results[live_slot] = run.results[0];
  }
  verdict.layerwise.push_back(std::move(run.comparison));
  verdict.streamed_validation = std::move(run.validation);
  verdict.inference_seconds = run.inference_seconds;
  verdict.comparison_seconds = run.comparison_seconds;
}

void Judge::run_held(const DataLoaderFunc& data_loader, Verdict& verdict) {
  RunOptions options;
  options.warm_up = options_.warm_up;
  options.intermediates = options_.tensors;
  options.exclude_outputs = options_.exclude;
  // Mark all leaves out Constants' values, as Polygraphy's does (and the streamed comparison).
  if (options_.tensors.mode == runtime::IntermediateOutputs::Mode::kAll && options_.model) {
    const onnx::Model model = options_.model();
    for (const auto& node : model->graph().node())
      if (onnx::is_constant_node(node))
        for (const auto& output : node.output()) options.exclude_outputs.insert(output);
  }
  options.on_feeds = options_.on_feeds;
  options.use_subprocess = options_.use_subprocess;
  // One result and nothing saved, compared or validated: intermediates are only described.
  options.drop_intermediates =
      live_.size() + held_.size() == 1 && !options_.on_results && !options_.validate.has_value();
  RunResults& results = verdict.results;
  results = Comparator::run(live_, data_loader, options);
  if (options_.on_results) options_.on_results(results);
  if (!options_.postprocess_held) Comparator::postprocess(results, options_.postprocess);
  results.insert(results.end(), std::make_move_iterator(held_.begin()), std::make_move_iterator(held_.end()));
  if (options_.postprocess_held) Comparator::postprocess(results, options_.postprocess);
  if (results.size() <= 1) return;
  CompareAccuracyOptions compare_options;
  compare_options.fail_fast = options_.fail_fast;
  compare_options.comparisons = options_.comparisons(results);
  verdict.accuracy = Comparator::compare_accuracy(results, options_.compare_func, compare_options);
  if (layerwise() && !live_.empty()) {
    auto producers = tensor_producers(options_.model());
    for (std::size_t p = 0; p < verdict.accuracy->pairs.size(); ++p) {
      LayerwiseResult layerwise = layerwise_from_pair(verdict.accuracy->pairs[p], producers);
      // Plain `simple` compared the tensors the results hold: their failures are reviewed as streamed ones are.
      if (options_.streamable_simple && p < compare_options.comparisons->size()) {
        const auto [first, second] = (*compare_options.comparisons)[p];
        for (auto& entry : layerwise.entries) {
          const auto& iterations0 = results[first].iterations;
          const auto& iterations1 = results[second].iterations;
          const auto it = static_cast<std::size_t>(entry.iteration);
          if (it >= iterations0.size() || it >= iterations1.size()) continue;
          const Tensor* out0 = iterations0[it].find(entry.comparison.output0);
          const Tensor* out1 = iterations1[it].find(entry.comparison.output1);
          if (out0 && out1) {
            review_layer(entry, out0->view(), out1->view(), options_.streamable_simple->infinities_compare_equal);
            entry.energies = energies(out0->view(), out1->view());
          }
        }
        mark_qdq_only(layerwise, results[first], results[second], producers);
      }
      verdict.layerwise.push_back(std::move(layerwise));
    }
  }
}

void Judge::conclude(Verdict& verdict) {
  // Layerwise comparisons run an ONNX model (never a compiled one): its nodes may name their modules.
  const auto has_node = [](const LayerwiseResult& r) {
    return std::any_of(r.entries.begin(), r.entries.end(), [](const auto& e) { return !e.node.empty(); });
  };
  if (options_.model && !live_.empty() && std::any_of(verdict.layerwise.begin(), verdict.layerwise.end(), has_node))
    name_torch_modules(verdict.layerwise, options_.model()->graph());
  // A PyTorch runner's module outputs, named by module in the comparisons it is part of.
  for (const runtime::Runner* runner : live_)
    if (const auto* pairings = runner->torch_module_pairings())
      for (auto& result : verdict.layerwise)
        if (result.runner0 == runner->name() || result.runner1 == runner->name())
          name_module_outputs(result, runner->name(), *pairings);
  if (options_.describe_layers) options_.describe_layers(verdict.layerwise);
  for (const auto& result : verdict.layerwise) log_layerwise_summary(result, options_.worst_count);
  if (verdict.streamed)
    verdict.passed = std::all_of(verdict.layerwise.begin(), verdict.layerwise.end(),
                                 [](const LayerwiseResult& result) { return result.passed(); });
  else
    verdict.passed = !verdict.accuracy || verdict.accuracy->passed();
  if (!options_.validate) return;
  if (options_.validate_held) {
    verdict.validation = Comparator::validate(verdict.results, *options_.validate);
  } else {
    const auto live_end = verdict.results.begin() + static_cast<std::ptrdiff_t>(live_.size());
    verdict.validation = Comparator::validate(RunResults(verdict.results.begin(), live_end), *options_.validate);
  }
  verdict.passed = verdict.passed && verdict.validation->passed;
  for (const auto& checks : verdict.streamed_validation) {
    checks.log();
    verdict.passed = verdict.passed && checks.passed();
  }
}

}  // namespace parity::compare
