// Comparing whole runs (Polygraphy's Comparator.compare_accuracy and Comparator.validate) and
// writing the result as a JSON report (`--report report.json`).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/compare_func.h"

namespace parity::compare {

// One runner's results over all iterations (an entry of Polygraphy's RunResults).
struct RunnerResults {
  std::string runner_name;
  std::vector<IterationResult> iterations;
};
using RunResults = std::vector<RunnerResults>;

struct PairResult {
  std::string runner0, runner1;
  std::vector<IterationComparison> iterations;  // zip of both runners' iterations
  int64_t passed_iterations() const;
  int64_t total_iterations() const { return static_cast<int64_t>(iterations.size()); }
  double pass_rate() const;  // percentage 0..100; 100 when there are no iterations
  bool passed() const { return passed_iterations() == total_iterations(); }
};

// Polygraphy's AccuracyResult: one entry per compared runner pair, in comparison order.
struct AccuracyResult {
  std::vector<PairResult> pairs;
  bool passed() const;  // every output of every iteration of every pair matched
};

struct CompareAccuracyOptions {
  bool fail_fast = false;
  // Runner index pairs; default: each runner with the next, [(0, 1), (1, 2), ...].
  std::optional<std::vector<std::pair<std::size_t, std::size_t>>> comparisons;
};

std::vector<std::pair<std::size_t, std::size_t>> default_comparisons(const RunResults& results);

// Logs "Accuracy Comparison | r0 vs. r1", the comparison blocks ("Iteration: k" headers when there
// is more than one iteration) and "Accuracy Summary | r0 vs. r1 | Passed: p/t iterations | Pass
// Rate: x%". With fail_fast, stops after the first mismatching iteration (without its summary).
AccuracyResult compare_accuracy(const RunResults& results, const CompareFunc& compare_func = simple(),
                                const CompareAccuracyOptions& options = {});

// Polygraphy's Comparator.validate (`--validate` sets check_inf and check_nan): per output, the
// stats line, then "NaN Detected | ..." / "Inf Detected | ..." and PASSED/FAILED lines.
struct ValidateOptions {
  bool check_inf = false;
  bool check_nan = true;
  bool fail_fast = false;
  statistics::StatisticsStyle style = statistics::StatisticsStyle::kParity;
};
struct OutputValidation {
  std::string runner_name;
  int64_t iteration = 0;
  std::string output_name;
  bool valid = true;
  statistics::TensorSummary summary;  // NaN/Inf counts and statistics
};
struct ValidationResult {
  bool passed = true;
  std::vector<OutputValidation> outputs;
};
ValidationResult validate(const RunResults& results, const ValidateOptions& options = {});

// ---- JSON report ----
// Non-finite numbers are written as the strings "nan", "inf", "-inf" (JSON has no such numbers).
nlohmann::ordered_json to_json(const statistics::TensorSummary& summary);
nlohmann::ordered_json to_json(const OutputComparison& comparison);
nlohmann::ordered_json to_json(const AccuracyResult& result);
nlohmann::ordered_json to_json(const ValidationResult& result);
// The whole report: {"parity_report_version": 1, "passed": ..., "accuracy": ..., "validation": ...}.
nlohmann::ordered_json make_report(const AccuracyResult* accuracy, const ValidationResult* validation);
// Writes `report` with a 4-space indent, atomically (temp file + rename). Throws FileError.
void save_report(const std::filesystem::path& path, const nlohmann::ordered_json& report);

}  // namespace parity::compare
