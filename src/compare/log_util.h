// Logging helpers shared by the comparison functions (private to compare).
#pragma once

#include <string>
#include <string_view>

#include "parity/compare/compare_func.h"
#include "parity/core/logger.h"
#include "parity/core/shape.h"
#include "parity/core/tensor.h"

namespace parity::compare::detail {

// Logs `message` at `severity` unless the same text was logged once before (Polygraphy's
// LogMode.ONCE, keyed by the message text, per process).
void log_once(Severity severity, const std::string& message);

// Polygraphy's util.indent_block: every line indented by 4 spaces.
std::string indent_block(std::string_view text);

// "(dtype=float32, shape=(1, 768))" parts.
std::string dtype_text(DType dtype);
inline std::string shape_text(const Shape& shape) { return shape_to_string(shape); }

// f"{name:35}": left-aligned, padded to 35 columns.
std::string runner_column(std::string_view runner_name);

// Runs the per-output comparison `match` over the outputs of `result0` paired with `result1`'s
// (Polygraphy's run_comparison): "Comparing Output: ..." lines, the mismatched-outputs summary,
// and the "All outputs were skipped" error (thrown as InvalidInputError after logging). An empty
// `find_output` pairs by default_find_output against `result0`.
using MatchFunc = std::function<OutputComparison(const std::string& name0, const Tensor& out0,
                                                 const std::string& name1, const Tensor& out1)>;
IterationComparison run_comparison(const MatchFunc& match, bool fail_fast, const IterationResult& result0,
                                   const IterationResult& result1, const FindOutputFunc& find_output);

// Polygraphy's check_dict: warns about per-output keys that name no output of either result.
template <typename T>
void check_per_output_keys(const PerOutput<T>& values, const IterationResult& r0, const IterationResult& r1,
                           std::string_view what);
void warn_unknown_keys(const std::vector<std::string>& keys, const IterationResult& r0, const IterationResult& r1,
                       std::string_view what);

template <typename T>
void check_per_output_keys(const PerOutput<T>& values, const IterationResult& r0, const IterationResult& r1,
                           std::string_view what) {
  if (!values.is_per_name()) return;
  std::vector<std::string> keys;
  for (const auto& [key, value] : values.entries()) keys.push_back(key);
  warn_unknown_keys(keys, r0, r1, what);
}

// Logs the stats line of `summary` and, indented, the values (<= 100 elements) and histogram at
// INFO when `failed` else VERBOSE (Polygraphy's log_output_stats).
void log_output_stats(const statistics::TensorSummary& summary, const TensorView* values,
                      const statistics::Histogram* histogram, bool failed, std::string_view label,
                      statistics::StatisticsStyle style);

}  // namespace parity::compare::detail
