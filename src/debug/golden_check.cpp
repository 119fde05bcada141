#include "parity/debug/golden_check.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

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
  compare::RunResults results;
  compare::AccuracyResult accuracy;
  bool valid = true;
  {
    QuietBelowVerbose quiet;
    try {
      compare::RunOptions run_options;
      run_options.warm_up = options_.warm_up;
      results = compare::Comparator::run({&candidate}, compare::data_loader_from(feeds_), run_options);
    } catch (const Error& error) {
      return {false, fmt::format("the candidate did not run: {}", error.what()), true};
    }
    compare::Comparator::postprocess(results, options_.postprocess);
    results.push_back(golden_);
    compare::CompareAccuracyOptions compare_options;
    compare_options.fail_fast = options_.fail_fast;
    accuracy = compare::Comparator::compare_accuracy(results, options_.compare_func, compare_options);
    if (options_.validate) valid = compare::Comparator::validate({results[0]}).passed;
  }
  const auto& pair = accuracy.pairs.at(0);
  std::string detail = describe_error(pair);
  if (!valid) detail += ", NaN or Inf in the outputs";
  return {pair.passed() && valid, detail};
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
