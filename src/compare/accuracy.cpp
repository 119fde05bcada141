// Comparator.compare_accuracy and Comparator.validate.
#include "parity/compare/accuracy.h"

#include <cmath>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "log_util.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"
#include "parity/core/values.h"

namespace parity::compare {

using namespace detail;
using namespace statistics;

int64_t PairResult::passed_iterations() const {
  int64_t passed = 0;
  for (const auto& it : iterations) passed += it.passed() ? 1 : 0;
  return passed;
}

double PairResult::pass_rate() const {
  if (iterations.empty()) return 100.0;
  return static_cast<double>(passed_iterations()) / static_cast<double>(total_iterations()) * 100.0;
}

bool AccuracyResult::passed() const {
  for (const auto& pair : pairs)
    for (const auto& it : pair.iterations)
      if (!it.passed()) return false;
  return true;
}

std::vector<std::pair<std::size_t, std::size_t>> default_comparisons(const RunResults& results) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i + 1 < results.size(); ++i) out.emplace_back(i, i + 1);
  return out;
}

namespace {

// isnan(x) (nan_only) or ~isfinite(x) as a bool tensor of the same shape.
Tensor nonfinite_mask(const TensorView& t, bool nan_only) {
  Tensor mask = Tensor::zeros(DType::kBool, t.shape());
  uint8_t* m = mask.mutable_data<uint8_t>();
  if (is_floating(t.dtype()))
    for (int64_t i = 0; i < t.size(); ++i) {
      double v = element_as_double(t, i);
      m[i] = nan_only ? std::isnan(v) : !std::isfinite(v);
    }
  return mask;
}

// x[mask] as a 1-D tensor.
Tensor masked_values(const TensorView& t, const Tensor& mask) {
  const uint8_t* m = mask.data<uint8_t>();
  int64_t count = 0;
  for (int64_t i = 0; i < mask.size(); ++i) count += m[i];
  Tensor out = Tensor::zeros(t.dtype(), Shape{count});
  const std::size_t bytes = storage_bytes(t.dtype(), 1);
  int64_t k = 0;
  for (int64_t i = 0; i < mask.size(); ++i)
    if (m[i])
      std::memcpy(static_cast<unsigned char*>(out.mutable_raw()) + static_cast<std::size_t>(k++) * bytes,
                  static_cast<const unsigned char*>(t.raw()) + static_cast<std::size_t>(i) * bytes, bytes);
  return out;
}

// The iteration as the comparison function sees it: named after its runner when it has no name.
IterationResult named(const IterationResult& iteration, const std::string& runner_name) {
  IterationResult out = iteration;
  if (out.runner_name.empty() || out.runner_name == "custom_runner") out.runner_name = runner_name;
  return out;
}

}  // namespace

AccuracyResult compare_accuracy(const RunResults& results, const CompareFunc& compare_func,
                                const CompareAccuracyOptions& options) {
  auto comparisons = options.comparisons.value_or(default_comparisons(results));
  AccuracyResult accuracy;
  for (const auto& [index0, index1] : comparisons) {
    if (index0 >= results.size() || index1 >= results.size())
      raise<InvalidInputError>("comparison ({}, {}) names a runner beyond the {} runner(s) that ran", index0, index1,
                               results.size());
    const RunnerResults& r0 = results[index0];
    const RunnerResults& r1 = results[index1];
    log::start("Accuracy Comparison | {} vs. {}", r0.runner_name, r1.runner_name);
    PairResult pair;
    pair.runner0 = r0.runner_name;
    pair.runner1 = r1.runner_name;
    {
      Logger::Indent indent;
      const std::size_t iterations = std::min(r0.iterations.size(), r1.iterations.size());
      for (std::size_t it = 0; it < iterations; ++it) {
        if (iterations > 1) log::info("Iteration: {}", it);
        std::optional<Logger::Indent> iteration_indent;
        if (iterations > 1) iteration_indent.emplace();
        IterationComparison comparison =
            compare_func(named(r0.iterations[it], r0.runner_name), named(r1.iterations[it], r1.runner_name));
        bool passed = comparison.passed();
        pair.iterations.push_back(std::move(comparison));
        if (options.fail_fast && !passed) {
          accuracy.pairs.push_back(std::move(pair));
          return accuracy;
        }
      }
      log::extra_verbose("Finished comparing {} with {}", r0.runner_name, r1.runner_name);
    }
    std::string message = fmt::format("Accuracy Summary | {} vs. {} | Passed: {}/{} iterations | Pass Rate: {}%",
                                      pair.runner0, pair.runner1, pair.passed_iterations(), pair.total_iterations(),
                                      python_float_repr(pair.pass_rate()));
    if (pair.passed()) log::finish("{}", message);
    else log::error("{}", message);
    accuracy.pairs.push_back(std::move(pair));
  }
  return accuracy;
}

ValidationResult validate(const RunResults& results, const ValidateOptions& options) {
  ValidationResult validation;
  std::vector<std::string> runner_names;
  for (const auto& r : results) runner_names.push_back(r.runner_name);
  auto bool_text = [](bool b) { return b ? "True" : "False"; };
  log::start("Output Validation | Runners: {}", python_list_repr(runner_names));
  {
    Logger::Indent indent;
    for (const auto& runner : results) {
      for (std::size_t it = 0; it < runner.iterations.size(); ++it) {
        for (const auto& [name, tensor] : runner.iterations[it].outputs) {
          log::start("{} | Validating output: {} (check_inf={}, check_nan={})", runner_column(runner.runner_name), name,
                     bool_text(options.check_inf), bool_text(options.check_nan));
          OutputValidation entry;
          entry.runner_name = runner.runner_name;
          entry.iteration = static_cast<int64_t>(it);
          entry.output_name = name;
          {
            Logger::Indent output_indent;
            entry.summary = summarize(tensor.view());
            std::optional<Histogram> hist;
            if (Logger::global().enabled(Severity::kVerbose) && !entry.summary.is_bool)
              hist = histogram(tensor.view(), std::nullopt, options.style);
            TensorView view = tensor.view();
            log_output_stats(entry.summary, &view, hist ? &*hist : nullptr, false, "", options.style);
            const TensorSummary& s = entry.summary;
            if (options.check_nan && s.nan_count > 0) {
              std::string line = "NaN Detected | One or more NaNs were encountered in this output";
              if (options.style == StatisticsStyle::kParity)
                line += fmt::format(" | {} of {} element(s)", s.nan_count, s.size);
              log::error("{}", line);
              log_once(Severity::kInfo,
                       "Note: Use -vv or set logging verbosity to EXTRA_VERBOSE to display locations of NaNs");
              if (Logger::global().enabled(Severity::kExtraVerbose))
                log::extra_verbose("Note: NaNs at:\n{}", numpy_array_str(nonfinite_mask(tensor.view(), true).view()));
              entry.valid = false;
            }
            int64_t nonfinite = s.nan_count + s.inf_count();
            if (options.check_inf && nonfinite > 0) {
              std::string line = "Inf Detected | One or more non-finite values were encountered in this output";
              if (options.style == StatisticsStyle::kParity)
                line += fmt::format(" | {} NaN, {} +Inf, {} -Inf of {} element(s)", s.nan_count, s.posinf_count,
                                    s.neginf_count, s.size);
              log::error("{}", line);
              log_once(Severity::kInfo,
                       "Note: Use -vv or set logging verbosity to EXTRA_VERBOSE to display non-finite values");
              if (Logger::global().enabled(Severity::kExtraVerbose)) {
                Tensor mask = nonfinite_mask(tensor.view(), false);
                log::extra_verbose("Note: non-finite values at:\n{}", numpy_array_str(mask.view()));
                log::extra_verbose("Note: non-finite values:\n{}",
                                   numpy_array_str(masked_values(tensor.view(), mask).view()));
              }
              entry.valid = false;
            }
            if (entry.valid) log::finish("PASSED | Output: {} is valid", name);
            else log::error("FAILED | Errors detected in output: {}", name);
          }
          validation.passed = validation.passed && entry.valid;
          validation.outputs.push_back(std::move(entry));
          if (options.fail_fast && !validation.passed) return validation;
        }
      }
    }
    if (validation.passed) log::finish("PASSED | Output Validation");
    else log::error("FAILED | Output Validation");
  }
  return validation;
}

}  // namespace parity::compare
