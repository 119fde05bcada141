#include "parity/debug/golden_check.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "parity/compare/judge.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/debug/quiet_below_verbose.h"

namespace parity::debug {
namespace {

// NaN counts as the largest error.
bool worse(double candidate, double current) {
  return std::isnan(candidate) ? !std::isnan(current) : candidate > current;
}

}  // namespace

GoldenCheck::GoldenCheck(compare::RunnerResults golden, std::vector<NamedTensors> feeds, GoldenCheckOptions options)
    : golden_(std::move(golden)), feeds_(std::move(feeds)), options_(std::move(options)) {
  compare::RunResults held{golden_};
  compare::Comparator::postprocess(held, options_.postprocess);
  golden_ = std::move(held[0]);
}

CandidateVerdict GoldenCheck::check(runtime::Runner& candidate) const {
  compare::JudgeOptions options;
  options.compare_func = options_.compare_func;
  options.postprocess = options_.postprocess;
  options.postprocess_held = false;  // the golden outputs were postprocessed once, when the check was made
  options.fail_fast = options_.fail_fast;
  if (options_.validate) options.validate = compare::ValidateOptions{};
  options.validate_held = false;
  options.warm_up = options_.warm_up;
  compare::Verdict verdict;
  {
    QuietBelowVerbose quiet;
    try {
      verdict = compare::Judge({&candidate}, {golden_}, std::move(options)).run(compare::data_loader_from(feeds_));
    } catch (const Error& error) {
      return {false, fmt::format("the candidate did not run: {}", error.what()), true};
    }
  }
  const compare::PairResult pair = verdict.accuracy ? verdict.accuracy->pairs.at(0) : verdict.layerwise.at(0).as_pair();
  std::string detail = describe_error(pair);
  if (verdict.validation && !verdict.validation->passed) detail += ", NaN or Inf in the outputs";
  return {verdict.passed, detail};
}

std::string describe_error(const compare::PairResult& pair) {
  double max_abs = 0, max_rel = 0;
  std::string worst_output;
  bool any_simple = false;
  std::vector<std::string> mismatched;
  for (const auto& iteration : pair.iterations) {
    for (const auto& output : iteration.outputs) {
      if (!output.passed && std::find(mismatched.begin(), mismatched.end(), output.output0) == mismatched.end())
        mismatched.push_back(output.output0);
      if (!output.simple) continue;
      if (!any_simple || worse(output.simple->max_absdiff, max_abs)) {
        max_abs = output.simple->max_absdiff;
        worst_output = output.output0;
      }
      if (!any_simple || worse(output.simple->max_reldiff, max_rel)) max_rel = output.simple->max_reldiff;
      any_simple = true;
    }
  }
  if (any_simple) return fmt::format("max abs error {:.3g}, max rel error {:.3g} (output '{}')", max_abs, max_rel,
                                     worst_output);
  if (mismatched.empty()) return "every output matched";
  return fmt::format("mismatched: {}", fmt::join(mismatched, ", "));
}

}  // namespace parity::debug
