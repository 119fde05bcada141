// `run --attribute`: error attribution (parity/compare/attribution.h) after a layerwise comparison
// of two runners: each compared tensor's local error (its node alone on the runner under test, fed
// the reference runner's values) beside its total and inherited error.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "parity/compare/attribution.h"
#include "parity/compare/judge.h"
#include "parity/onnx/model.h"
#include "parity/runtime/runner.h"

namespace parity::cli {

class AttributionArgs {
 public:
  void add_to(CLI::App& app);
  bool requested() const { return attribute_; }
  // What the run must be for attribution (checked before anything runs): every tensor compared
  // (--onnx-outputs mark all, or --ov-outputs mark fused), two live runners, no loaded results, the
  // `simple` comparison.
  void check(bool mark_all, int runners, bool loaded_results, bool simple) const;
  // Keeps the first iteration's feeds (call from the judge's on_feeds).
  void keep_feeds(const std::vector<NamedTensors>& feeds);
  // Attributes the verdict's layerwise comparison: `reference` is run again, and each batch of
  // nodes runs on a runner of `under_test`'s backend and settings (a PyTorch runner under test: each
  // module alone, compare/module_attribution.h). `model`: the run's ONNX model (empty loader: none).
  // Logs the result and keeps it for add_to_report().
  void attribute(const runtime::ModelLoader& model, runtime::Runner& reference, runtime::Runner& under_test,
                 const compare::Verdict& verdict, const compare::SimpleOptions& simple, uint64_t memory_budget,
                 std::size_t count);
  // The attribution; nullptr when it did not run.
  const compare::AttributionResult* result() const { return result_ ? &*result_ : nullptr; }
  // Each batch model is transformed by `prepare` before it runs on the runner under test (see
  // AttributionOptions::prepare_batch); nullptr: none.
  // `type`: the reduced type it converts nodes to (AttributionOptions::prepared_type).
  void prepare_batches_with(std::function<void(onnx::Model&)> prepare, DType type) {
    prepare_batch_ = std::move(prepare);
    prepared_type_ = type;
  }
  // Adds "attribution" to the report when attribution ran.
  void add_to_report(nlohmann::ordered_json& report) const;

 private:
  bool attribute_ = false;
  NamedTensors feed_;
  std::optional<compare::AttributionResult> result_;
  std::size_t count_ = 10;
  std::function<void(onnx::Model&)> prepare_batch_;
  DType prepared_type_ = DType::kUndefined;
};

}  // namespace parity::cli
