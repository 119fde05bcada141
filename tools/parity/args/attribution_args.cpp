#include "args/attribution_args.h"

#include "parity/compare/module_attribution.h"
#include "parity/core/error.h"

namespace parity::cli {

void AttributionArgs::add_to(CLI::App& app) {
  app.add_flag("--attribute", attribute_,
               "With --onnx-outputs mark all and two runners: for each compared tensor, the error its node introduces "
               "(the node alone on the second runner, fed the first runner's values of its inputs) beside the error "
               "it inherits from its inputs; nodes ranked by introduced error, discontinuous ops that flip on "
               "inherited differences flagged (first iteration)")
      ->group("Error Attribution");
}

void AttributionArgs::check(bool mark_all, int runners, bool loaded_results, bool simple) const {
  if (!attribute_) return;
  if (!mark_all)
    raise<InvalidInputError>("--attribute needs every tensor compared: add --onnx-outputs mark all (or, on OpenVINO, "
                             "--ov-outputs mark fused)");
  if (runners != 2 || loaded_results)
    raise<InvalidInputError>("--attribute compares two live runners (the first is the reference, the second the "
                             "runner under test); {} runner(s) given{}",
                             runners, loaded_results ? " and results loaded (--load-outputs)" : "");
  if (!simple)
    raise<InvalidInputError>("--attribute measures errors as the `simple` comparison does: leave out "
                             "--compare-func/--compare-func-script");
}

void AttributionArgs::keep_feeds(const std::vector<NamedTensors>& feeds) {
  if (attribute_ && !feeds.empty()) feed_ = feeds.front();
}

void AttributionArgs::attribute(const runtime::ModelLoader& model, runtime::Runner& reference,
                                runtime::Runner& under_test, const compare::Verdict& verdict,
                                const compare::SimpleOptions& simple, uint64_t memory_budget, std::size_t count) {
  if (verdict.layerwise.size() != 1)
    raise<InternalError>("--attribute: {} layerwise comparisons, one expected", verdict.layerwise.size());
  compare::AttributionOptions options;
  options.simple = simple;
  options.memory_budget = memory_budget;
  options.prepare_batch = prepare_batch_;
  options.prepared_type = prepared_type_;
  result_ = compare::attribute_run(model, reference, under_test, feed_, verdict.layerwise.front(), options);
  count_ = count;
  compare::log_attribution(*result_, count);
}

void AttributionArgs::add_to_report(nlohmann::ordered_json& report) const {
  if (result_) report["attribution"] = compare::to_json(*result_, count_);
}

}  // namespace parity::cli
