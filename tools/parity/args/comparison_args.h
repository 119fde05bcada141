// Polygraphy's comparator flags: postprocessing, the comparison function and its tolerances,
// --validate, --fail-fast, --compare-to, --load-outputs and --report, parsed into the compare
// layer's options.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/compare/comparator.h"

namespace parity::cli {

class GeneratedScript;

class ComparisonArgs {
 public:
  // Adds the "Comparator Postprocessing", "Comparator Comparisons" and "Comparison Function: *"
  // groups.
  void add_to(CLI::App& app);
  // Checks and converts the values (before anything runs, so bad flags fail fast).
  void parse();

  compare::CompareFunc compare_func() const;
  // `simple` is the function and no script replaces it (what a streamed comparison can do).
  bool is_plain_simple() const { return compare_func_ == "simple" && compare_func_script_.empty(); }
  const compare::SimpleOptions& simple_options() const { return simple_options_; }
  // Adds what `simple` calls with each output pair it compared (--save-heatmaps, --report-html), after
  // those added before.
  void add_on_compared(compare::ComparedPairObserver observer) {
    if (auto before = std::move(simple_options_.on_compared))
      simple_options_.on_compared = [before = std::move(before), observer = std::move(observer)](
                                        const compare::ComparedPair& pair) {
        before(pair);
        observer(pair);
      };
    else
      simple_options_.on_compared = std::move(observer);
  }
  const compare::PostprocessRules& postprocess_rules() const { return postprocess_rules_; }
  // Pairs of result indices to compare: adjacent pairs, or each against --compare-to's target.
  std::vector<std::pair<std::size_t, std::size_t>> comparisons(const compare::RunResults& results) const;

  bool validate() const { return validate_; }
  bool fail_fast() const { return fail_fast_; }
  statistics::StatisticsStyle style() const { return style_; }
  compare::ValidateOptions validate_options() const;
  const std::vector<std::string>& load_outputs() const { return load_outputs_; }
  const std::string& report() const { return report_; }

  // --gen-script: loading results, postprocessing, the comparison and validation sections after
  // "results = Comparator.run(...)". `compared`: whether the command compares (two or more results).
  void add_to_script(GeneratedScript& script, bool compared) const;
  // --gen-script of a streamed layerwise run: "result = Comparator.run_layerwise(runners, ...)" with
  // `run_arguments` (the runners, the data loader's and the layerwise options) and this group's
  // comparison function, postprocessing, fail-fast and validation, then the verdict.
  void add_layerwise_to_script(GeneratedScript& script, std::vector<std::string> run_arguments) const;

 private:
  // The comparison function and --postprocess as Python expressions (their imports added).
  std::string compare_func_to_script(GeneratedScript& script) const;
  std::string postprocess_func_to_script(GeneratedScript& script) const;

  std::vector<std::string> postprocess_;
  bool validate_ = false, fail_fast_ = false;
  std::string compare_func_ = "simple", compare_func_script_, compare_to_;
  std::vector<std::string> load_outputs_;
  std::string report_, stats_style_ = "parity";
  bool no_shape_check_ = false, infinities_compare_equal_ = false;
  std::vector<std::string> rtol_, atol_, check_error_stat_, error_quantile_, index_tolerance_;
  std::vector<std::string> l2_tolerance_, cosine_threshold_, psnr_tolerance_, snr_tolerance_;

  statistics::StatisticsStyle style_ = statistics::StatisticsStyle::kParity;
  compare::PostprocessRules postprocess_rules_;
  compare::SimpleOptions simple_options_;
  compare::IndicesOptions indices_options_;
  compare::DistanceOptions distance_options_;
  compare::QualityOptions quality_options_;
};

}  // namespace parity::cli
