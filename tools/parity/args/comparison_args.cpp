#include "args/comparison_args.h"

#include <cmath>

#include <fmt/format.h>

#include "args/generated_script.h"
#include "args/python_scripts.h"
#include "args/value_parsing.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {

void ComparisonArgs::add_to(CLI::App& app) {
  const char* post = "Comparator Postprocessing";
  app.add_option("--postprocess,--postprocess-func", postprocess_, "[<out>:]top-<K>[,axis=<A>] ...")->group(post);

  const char* cmp = "Comparator Comparisons";
  app.add_flag("--validate", validate_, "Check outputs for NaN and Inf")->group(cmp);
  app.add_flag("--fail-fast", fail_fast_, "Stop at the first failing comparison")->group(cmp);
  app.add_option("--compare,--compare-func", compare_func_, "Comparison function: simple, indices, distance, quality")
      ->check(CLI::IsMember({"simple", "indices", "distance", "quality"}))
      ->group(cmp);
  app.add_option("--compare-func-script", compare_func_script_,
                 "Python script[:function] (default compare_outputs) called with two iteration results, "
                 "returning {output name: result}; bool(result) is the verdict. Replaces --compare")
      ->group(cmp);
  app.add_option("--compare-to", compare_to_,
                 "Compare every result against this one ('first', a runner name or prefix, or an index) "
                 "instead of adjacent pairs")->group(cmp);
  app.add_option("--load-outputs,--load-results", load_outputs_,
                 "RunResults files (Polygraphy JSON, or an .npz of one iteration's outputs keyed by output "
                 "name) whose results take part in the comparison like live runners")->group(cmp);
  app.add_option("--report", report_, "Write a JSON report of the comparisons")->group(cmp);
  app.add_option("--stats-style", stats_style_, "Statistics text: parity (default) or polygraphy")
      ->check(CLI::IsMember({"parity", "polygraphy"}))
      ->group(cmp);

  const char* simple = "Comparison Function: simple";
  app.add_flag("--no-shape-check", no_shape_check_, "Compare outputs of different shapes after reshaping")
      ->group(simple);
  app.add_option("--rtol,--rel-tol", rtol_, "Relative tolerance [<out>:]value ...")->group(simple);
  app.add_option("--atol,--abs-tol", atol_, "Absolute tolerance [<out>:]value ...")->group(simple);
  app.add_option("--check-error-stat", check_error_stat_,
                 "Error statistic to check: [<out>:]{max,mean,median,elemwise,quantile} ...")->group(simple);
  app.add_flag("--infinities-compare-equal", infinities_compare_equal_, "Matching infinities count as equal")
      ->group(simple);
  app.add_option("--error-quantile", error_quantile_, "Quantile for --check-error-stat quantile: [<out>:]q ...")
      ->group(simple);
  const char* indices = "Comparison Function: indices";
  app.add_option("--index-tolerance", index_tolerance_, "Index tolerance [<out>:]n ...")->group(indices);
  const char* distance = "Comparison Function: distance";
  app.add_option("--l2-tolerance", l2_tolerance_, "Largest L2 norm of the difference [<out>:]value ... (1e-5)")
      ->group(distance);
  app.add_option("--cosine-similarity-threshold", cosine_threshold_,
                 "Smallest cosine similarity [<out>:]value ... in [-1, 1] (0.997)")->group(distance);
  const char* quality = "Comparison Function: quality";
  app.add_option("--psnr-tolerance", psnr_tolerance_, "Smallest PSNR in dB [<out>:]value ... (30)")->group(quality);
  app.add_option("--snr-tolerance", snr_tolerance_, "Smallest SNR in dB [<out>:]value ... (20)")->group(quality);
}

void ComparisonArgs::parse() {
  style_ = stats_style_ == "polygraphy" ? statistics::StatisticsStyle::kPolygraphy
                                        : statistics::StatisticsStyle::kParity;
  for (const auto& arg : postprocess_) postprocess_rules_.push_back(compare::parse_postprocess(arg));

  // A NaN tolerance would pass every comparison (see compare::check_tolerances).
  auto tolerance = [](const char* flag) {
    return [flag](const std::string& s) {
      double v = parse_double(s, flag);
      if (std::isnan(v))
        raise<InvalidInputError>("{}: expected a number, got '{}' (a NaN tolerance passes every comparison)",
                                 flag, s);
      return v;
    };
  };
  simple_options_.atol = per_output<double>(atol_, 1e-5, tolerance("--atol"));
  simple_options_.rtol = per_output<double>(rtol_, 1e-5, tolerance("--rtol"));
  simple_options_.check_error_stat =
      per_output<compare::ErrorStat>(check_error_stat_, compare::ErrorStat::kElemwise,
                                     [](const std::string& s) { return compare::parse_error_stat(s); });
  simple_options_.error_quantile = per_output<double>(error_quantile_, 0.99, [](const std::string& s) {
    double q = parse_double(s, "--error-quantile");
    if (!(q >= 0 && q <= 1)) raise<InvalidInputError>("--error-quantile must be in [0, 1], got {}", s);
    return q;
  });
  simple_options_.infinities_compare_equal = infinities_compare_equal_;
  simple_options_.check_shapes = !no_shape_check_;
  simple_options_.fail_fast = fail_fast_;
  simple_options_.style = style_;
  distance_options_.l2_tolerance = per_output<double>(l2_tolerance_, 1e-5, [](const std::string& s) {
    double v = parse_double(s, "--l2-tolerance");
    if (!(v >= 0)) raise<InvalidInputError>("--l2-tolerance must be >= 0, got {}", s);
    return v;
  });
  distance_options_.cosine_similarity_threshold =
      per_output<double>(cosine_threshold_, 0.997, [](const std::string& s) {
        double v = parse_double(s, "--cosine-similarity-threshold");
        if (!(v >= -1 && v <= 1))
          raise<InvalidInputError>("--cosine-similarity-threshold must be in [-1, 1], got {}", s);
        return v;
      });
  quality_options_.psnr_tolerance = per_output<double>(psnr_tolerance_, 30.0, [](const std::string& s) {
    return parse_double(s, "--psnr-tolerance");
  });
  quality_options_.snr_tolerance = per_output<double>(snr_tolerance_, 20.0, [](const std::string& s) {
    return parse_double(s, "--snr-tolerance");
  });
  // Options of the simple and indices functions given with another function: Polygraphy's warning.
  auto warn_unused = [this](const char* option_strings, const char* function, bool given) {
    if (given && compare_func_ != function)
      log::warning("Option: {} is only valid for comparison function: '{}'. The selected comparison function is: "
                   "'{}', so this option will be ignored.",
                   option_strings, function, compare_func_);
  };
  warn_unused("--rtol/--rel-tol", "simple", !rtol_.empty());
  warn_unused("--atol/--abs-tol", "simple", !atol_.empty());
  warn_unused("--check-error-stat", "simple", !check_error_stat_.empty());
  warn_unused("--infinities-compare-equal", "simple", infinities_compare_equal_);
  warn_unused("--error-quantile", "simple", !error_quantile_.empty());
  warn_unused("--index-tolerance", "indices", !index_tolerance_.empty());
  for (auto [flag, given] : {std::pair{"--l2-tolerance", &l2_tolerance_},
                             std::pair{"--cosine-similarity-threshold", &cosine_threshold_}})
    if (!given->empty() && compare_func_ != "distance")
      log::warning("{} applies to --compare distance only; it is ignored with --compare {}", flag, compare_func_);
  for (auto [flag, given] :
       {std::pair{"--psnr-tolerance", &psnr_tolerance_}, std::pair{"--snr-tolerance", &snr_tolerance_}})
    if (!given->empty() && compare_func_ != "quality")
      log::warning("{} applies to --compare quality only; it is ignored with --compare {}", flag, compare_func_);
  indices_options_.index_tolerance = per_output<int64_t>(index_tolerance_, 0, [](const std::string& s) {
    int64_t n = parse_int(s, "--index-tolerance");
    if (n < 0) raise<InvalidInputError>("--index-tolerance must be >= 0, got {}", n);
    return n;
  });
  indices_options_.fail_fast = fail_fast_;
  indices_options_.style = style_;
  distance_options_.check_shapes = quality_options_.check_shapes = !no_shape_check_;
  distance_options_.fail_fast = quality_options_.fail_fast = fail_fast_;
  distance_options_.style = quality_options_.style = style_;
}

compare::CompareFunc ComparisonArgs::compare_func() const {
  if (!compare_func_script_.empty())
    return compare_func_script(parse_script_spec(compare_func_script_, "compare_outputs"));
  if (compare_func_ == "indices") return compare::indices(indices_options_);
  if (compare_func_ == "distance") return compare::distance(distance_options_);
  if (compare_func_ == "quality") return compare::quality(quality_options_);
  return compare::simple(simple_options_);
}

compare::ValidateOptions ComparisonArgs::validate_options() const {
  compare::ValidateOptions options;
  options.check_inf = options.check_nan = true;
  options.fail_fast = fail_fast_;
  options.style = style_;
  return options;
}

std::vector<std::pair<std::size_t, std::size_t>> ComparisonArgs::comparisons(const compare::RunResults& results) const {
  if (compare_to_.empty()) return compare::default_comparisons(results);
  std::size_t target = SIZE_MAX;
  if (compare_to_ == "first") {
    target = 0;
  } else if (compare_to_ == "last") {
    target = results.empty() ? 0 : results.size() - 1;
  } else if (compare_to_.find_first_not_of("-0123456789") == std::string::npos) {
    int64_t index = parse_int(compare_to_, "--compare-to");
    if (index < 0) index += static_cast<int64_t>(results.size());
    if (index < 0 || index >= static_cast<int64_t>(results.size()))
      raise<InvalidInputError>("--compare-to: index {} is out of range ({} result(s))", compare_to_, results.size());
    target = static_cast<std::size_t>(index);
  } else {
    std::vector<std::size_t> matches;
    for (std::size_t i = 0; i < results.size(); ++i)
      if (results[i].runner_name == compare_to_) matches = {i};
    if (matches.empty())
      for (std::size_t i = 0; i < results.size(); ++i)
        if (results[i].runner_name.starts_with(compare_to_)) matches.push_back(i);
    std::vector<std::string> names;
    for (const auto& result : results) names.push_back(result.runner_name);
    if (matches.size() != 1)
      raise<InvalidInputError>("--compare-to: '{}' {} (results: {})", compare_to_,
                               matches.empty() ? "matches no runner" : "matches more than one runner",
                               fmt::join(names, ", "));
    target = matches[0];
  }
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (i != target) pairs.emplace_back(i, target);
  return pairs;
}

std::string ComparisonArgs::postprocess_func_to_script(GeneratedScript& script) const {
  std::vector<std::string> entries;
  for (const auto& [name, rule] : postprocess_rules_)
    entries.push_back(python_string(name) + ": " +
                      (rule.axis == -1 ? fmt::format("{}", rule.k) : fmt::format("({}, {})", rule.k, rule.axis)));
  script.add_import("parity.comparator", "PostprocessFunc");
  return fmt::format("PostprocessFunc.top_k({{{}}})", fmt::join(entries, ", "));
}

std::string ComparisonArgs::compare_func_to_script(GeneratedScript& script) const {
  auto number = [](const std::string& text) { return python_float(parse_double(text, "a tolerance")); };
  auto integer = [](const std::string& text) { return std::to_string(parse_int(text, "--index-tolerance")); };
  auto text = [](const std::string& value) { return python_string(value); };
  std::string function;
  std::vector<std::string> arguments;
  if (!compare_func_script_.empty()) {
    script.cannot_express("--compare-func-script");
  } else {
    script.add_import("parity.comparator", "CompareFunc");
    if (compare_func_ == "simple") {
      if (no_shape_check_) arguments.push_back("check_shapes=False");
      if (!rtol_.empty()) arguments.push_back("rtol=" + python_per_output_dict(rtol_, number));
      if (!atol_.empty()) arguments.push_back("atol=" + python_per_output_dict(atol_, number));
      if (fail_fast_) arguments.push_back("fail_fast=True");
      if (!check_error_stat_.empty())
        arguments.push_back("check_error_stat=" + python_per_output_dict(check_error_stat_, text));
      if (infinities_compare_equal_) arguments.push_back("infinities_compare_equal=True");
      if (!error_quantile_.empty())
        arguments.push_back("error_quantile=" + python_per_output_dict(error_quantile_, number));
    } else if (compare_func_ == "indices") {
      if (!index_tolerance_.empty())
        arguments.push_back("index_tolerance=" + python_per_output_dict(index_tolerance_, integer));
      if (fail_fast_) arguments.push_back("fail_fast=True");
    } else if (compare_func_ == "distance") {
      if (no_shape_check_) arguments.push_back("check_shapes=False");
      if (!l2_tolerance_.empty()) arguments.push_back("l2_tolerance=" + python_per_output_dict(l2_tolerance_, number));
      if (!cosine_threshold_.empty())
        arguments.push_back("cosine_similarity_threshold=" + python_per_output_dict(cosine_threshold_, number));
      if (fail_fast_) arguments.push_back("fail_fast=True");
    } else {
      if (no_shape_check_) arguments.push_back("check_shapes=False");
      if (!psnr_tolerance_.empty())
        arguments.push_back("psnr_tolerance=" + python_per_output_dict(psnr_tolerance_, number));
      if (!snr_tolerance_.empty())
        arguments.push_back("snr_tolerance=" + python_per_output_dict(snr_tolerance_, number));
      if (fail_fast_) arguments.push_back("fail_fast=True");
    }
    if (style_ == statistics::StatisticsStyle::kPolygraphy) arguments.push_back("statistics_style='polygraphy'");
    function = fmt::format("CompareFunc.{}({})", compare_func_, fmt::join(arguments, ", "));
  }
  return function;
}

void ComparisonArgs::add_layerwise_to_script(GeneratedScript& script, std::vector<std::string> run_arguments) const {
  std::vector<std::string> lines{"compare_func = " + compare_func_to_script(script)};
  run_arguments.push_back("compare_func=compare_func");
  if (!postprocess_rules_.empty()) run_arguments.push_back("postprocess_func=" + postprocess_func_to_script(script));
  if (fail_fast_) run_arguments.push_back("fail_fast=True");
  if (validate_) run_arguments.push_back("validate=True");
  lines.push_back(fmt::format("result = Comparator.run_layerwise({})", fmt::join(run_arguments, ", ")));
  lines.push_back("success = bool(result)");
  script.add_section("Layerwise Comparison", lines);
  script.add_import("parity.exception", "ParityException");
  script.add_section("Report Results", {"if not success:", "    raise ParityException('FAILED')"});
}

void ComparisonArgs::add_to_script(GeneratedScript& script, bool compared) const {
  if (!load_outputs_.empty()) {
    script.add_import("parity.comparator", "RunResults");
    script.add_section("Load results", {fmt::format("for load_output in {}:", script.path_list(load_outputs_)),
                                        "    results.extend(RunResults.load(load_output))"});
  }
  if (!postprocess_rules_.empty())
    script.add_section("Postprocessing", {fmt::format("results = Comparator.postprocess(results, {})",
                                                      postprocess_func_to_script(script))});
  script.add_lines({"success = True"});
  if (compared) {
    std::string function = compare_func_to_script(script);
    std::vector<std::string> accuracy{"compare_func=compare_func"};
    if (fail_fast_) accuracy.push_back("fail_fast=True");
    if (!compare_to_.empty()) {
      // Every result against one: Comparator.compare_accuracy's `comparisons` (pairs of indices).
      std::string target;
      if (compare_to_ == "first") target = "0";
      else if (compare_to_ == "last") target = "len(results) - 1";
      else if (compare_to_.find_first_not_of("-0123456789") == std::string::npos)
        target = fmt::format("{} % len(results)", parse_int(compare_to_, "--compare-to"));
      else
        script.cannot_express("--compare-to " + compare_to_ + " (a runner name; give an index, 'first' or 'last')");
      if (!target.empty())
        accuracy.push_back(fmt::format("comparisons=[(i, {0}) for i in range(len(results)) if i != {0}]", target));
    }
    script.add_section("Accuracy Comparison", {"compare_func = " + function,
                                               fmt::format("success &= bool(Comparator.compare_accuracy(results, {}))",
                                                           fmt::join(accuracy, ", "))});
  }
  if (validate_)
    script.add_section("Validation", {"success &= Comparator.validate(results, check_inf=True, check_nan=True)"});
  script.add_import("parity.exception", "ParityException");
  script.add_section("Report Results", {"if not success:", "    raise ParityException('FAILED')"});
}

}  // namespace parity::cli
