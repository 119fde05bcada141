// The judge: runs the runners over the data loader and decides whether the run passed, the way
// `parity run` does; `run`, `debug reduce`'s in-process check, `debug precision`'s golden check and
// the Python API's Comparator.run_layerwise all go through it.
//
//   Judge judge(live_runners, held_results, options);   // the comparison pairs, streamed or held
//   Verdict verdict = judge.run(data_loader);
//
// Streamed or held: a layerwise comparison (options.tensors not kNone) of exactly two results, at
// least one of them live, with plain `simple`, in this process, nothing asking for the results
// (options.on_results unset), is streamed tensor by tensor (Comparator::run_layerwise: memory
// bounded by options.memory_budget plus one tensor a side). Every other run is held:
// Comparator::run, options.on_results, the held results appended, postprocess, compare_accuracy
// over options.comparisons, and, layerwise, the pairs turned into layerwise results with each
// tensor's producing node.
//
// Then, either way: each layerwise entry's PyTorch module named from options.model's nodes (when a
// runner is live; name_torch_modules), options.describe_layers on the layerwise results, their
// summaries logged (first divergence, worst tensors), validation (Comparator::validate and,
// streamed, every tensor's NaN/Inf checks), and the verdict. Nothing here parses flags; the log lines are the Comparator's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/comparator.h"

namespace parity::compare {

using ComparisonPairs = std::vector<std::pair<std::size_t, std::size_t>>;

struct JudgeOptions {
  // Tensors compared besides the graph outputs (layerwise): none, every tensor (mark all: less the
  // values of Constant nodes, as Polygraphy's mark all), or a list.
  runtime::IntermediateOutputs tensors;
  // Tensors never compared nor kept, graph outputs included.
  std::set<std::string> exclude;
  // The model the runners run, asked for only in layerwise runs: its graph outputs (compared with
  // a list of tensors, streamed; unset: only the listed tensors) and the nodes producing each
  // tensor (held layerwise summaries; required there). Unset: the first live runner's
  // Runner::source_model(), if any.
  std::function<onnx::Model()> model;

  CompareFunc compare_func = simple();
  // The `simple` options when compare_func is plain `simple` (then a layerwise comparison may be
  // streamed); none for any other comparison function.
  std::optional<SimpleOptions> streamable_simple;
  PostprocessRules postprocess;
  // Whether the held results given to the judge are postprocessed too (false: the caller did).
  bool postprocess_held = true;
  // Which results are compared, from the results' runner names: live runners first, in order,
  // then the held ones. Default: each with the next (default_comparisons).
  std::function<ComparisonPairs(const RunResults&)> comparisons;
  bool fail_fast = false;
  // --validate: NaN/Inf checks of the results (and, streamed, of every tensor).
  std::optional<ValidateOptions> validate;
  bool validate_held = true;  // false: only the live runners' results are validated

  int warm_up = 0;
  uint64_t memory_budget = LayerwiseRunOptions{}.memory_budget;  // streamed: see LayerwiseRunOptions
  std::size_t worst_count = 10;                                   // worst tensors in the summaries
  bool use_subprocess = false;                                    // RunOptions::use_subprocess
  std::function<void(const std::vector<NamedTensors>&)> on_feeds;
  // Called with the live runners' results (before postprocessing) as soon as they are made, e.g.
  // to save them; a run whose results are asked for is held, never streamed.
  std::function<void(const RunResults&)> on_results;
  // Called on the layerwise results before their summaries are logged, e.g. to name the engine
  // layer behind each tensor (LayerwiseEntry::engine_layer).
  std::function<void(std::vector<LayerwiseResult>&)> describe_layers;
};

struct Verdict {
  // Every result in comparison order (live runners, then held); streamed, the graph outputs only.
  RunResults results;
  // Two or more results, held (a streamed run's comparisons are kept once, in `layerwise`; its
  // report builds the accuracy from them: LayerwiseResult::as_pair).
  std::optional<AccuracyResult> accuracy;
  std::vector<LayerwiseResult> layerwise;        // layerwise runs: one per compared pair
  std::optional<ValidationResult> validation;    // with options.validate
  std::vector<StreamedValidation> streamed_validation;  // streamed with options.validate
  bool streamed = false;
  // Streamed: where the time went (LayerwiseRun::inference_seconds, comparison_seconds).
  double inference_seconds = 0, comparison_seconds = 0;
  bool passed = true;

  // The JSON report (`--report`): make_report's accuracy and validation, "layerwise" (the
  // `worst_count` worst tensors of each), "streamed_validation" and "passed".
  nlohmann::ordered_json report(std::size_t worst_count = 10) const;
};

class Judge {
 public:
  // Works out the comparison pairs from the runners' and held results' names (a bad choice of
  // pairs fails here, before anything runs) and whether the run is streamed.
  Judge(std::vector<runtime::Runner*> live, RunResults held, JudgeOptions options);

  bool streamed() const { return streamed_; }

  // Runs and judges, once (the held results move into the verdict); the runners are activated and
  // deactivated in turn. Layerwise runs set glibc's mmap threshold for the process (their many
  // large tensors then go back to the system when freed).
  Verdict run(const DataLoaderFunc& data_loader);

 private:
  bool layerwise() const { return options_.tensors.mode != runtime::IntermediateOutputs::Mode::kNone; }
  void run_streamed(const DataLoaderFunc& data_loader, Verdict& verdict);
  void run_held(const DataLoaderFunc& data_loader, Verdict& verdict);
  void conclude(Verdict& verdict);

  std::vector<runtime::Runner*> live_;
  RunResults held_;
  JudgeOptions options_;
  ComparisonPairs pairs_;
  bool streamed_ = false;
  bool ran_ = false;
};

}  // namespace parity::compare
