// Output pairing, the per-iteration comparison loop and logging helpers shared by the comparison
// functions.
#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "log_util.h"
#include "parity/compare/compare_func.h"
#include "parity/core/python_format.h"
#include "parity/core/error.h"

namespace parity::compare {

const Tensor* IterationResult::find(std::string_view name) const {
  for (const auto& [key, tensor] : outputs)
    if (key == name) return &tensor;
  return nullptr;
}

std::vector<std::string> IterationResult::names() const {
  std::vector<std::string> out;
  for (const auto& [key, tensor] : outputs) out.push_back(key);
  return out;
}

bool IterationComparison::passed() const {
  return std::all_of(outputs.begin(), outputs.end(), [](const OutputComparison& o) { return o.passed; });
}

std::vector<std::string> IterationComparison::mismatched() const {
  std::vector<std::string> out;
  for (const auto& o : outputs)
    if (!o.passed) out.push_back(o.output0);
  return out;
}

ErrorStat parse_error_stat(std::string_view name) {
  if (name == "elemwise") return ErrorStat::kElemwise;
  if (name == "max") return ErrorStat::kMax;
  if (name == "mean") return ErrorStat::kMean;
  if (name == "median") return ErrorStat::kMedian;
  if (name == "quantile") return ErrorStat::kQuantile;
  raise<InvalidInputError>(
      "Invalid choice for check_error_stat: {}.\nNote: Valid choices are: ['max', 'mean', 'median', 'elemwise', "
      "'quantile']",
      name);
}

std::string_view error_stat_name(ErrorStat stat) {
  switch (stat) {
    case ErrorStat::kElemwise: return "elemwise";
    case ErrorStat::kMax: return "max";
    case ErrorStat::kMean: return "mean";
    case ErrorStat::kMedian: return "median";
    case ErrorStat::kQuantile: return "quantile";
  }
  return "elemwise";
}

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::mutex& once_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& once_messages() {
  static std::set<std::string> messages;
  return messages;
}

}  // namespace

void reset_log_once() {
  std::lock_guard<std::mutex> lock(once_mutex());
  once_messages().clear();
}

std::optional<std::string> find_str_in_iterable(std::string_view name, const std::vector<std::string>& sequence,
                                                std::optional<std::size_t> index) {
  for (const auto& s : sequence)
    if (s == name) return s;
  std::string lname = lower(name);
  for (const auto& s : sequence) {
    std::string ls = lower(s);
    if (ls.find(lname) != std::string::npos || lname.find(ls) != std::string::npos) return s;
  }
  if (index && *index < sequence.size()) return sequence[*index];
  return std::nullopt;
}

std::vector<std::string> default_find_output(const std::string& output_name, std::size_t index,
                                             const IterationResult& other, const IterationResult& base) {
  auto found = find_str_in_iterable(output_name, other.names(), index);
  if (!found) return {};
  if (*found != output_name) {
    auto exact = find_str_in_iterable(*found, base.names());
    if (exact && *exact == *found) {
      log::verbose("Will not compare {} with {}, since the former already has an exact match: {}", *found,
                   output_name, *exact);
      return {};
    }
    log::warning("Output names did not match exactly. Assuming {} output: {} corresponds to output: {}",
                 other.runner_name, *found, output_name);
  }
  return {*found};
}

namespace detail {

void log_once(Severity severity, const std::string& message) {
  if (!Logger::global().enabled(severity)) return;
  {
    std::lock_guard<std::mutex> lock(once_mutex());
    if (!once_messages().insert(message).second) return;
  }
  Logger::global().log(severity, message);
}

std::string indent_block(std::string_view text) {
  std::string out = "    ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

std::string dtype_text(DType dtype) { return std::string(dtype_name(dtype)); }

std::string runner_column(std::string_view runner_name) { return pad_right(runner_name, 35); }

void warn_unknown_keys(const std::vector<std::string>& keys, const IterationResult& r0, const IterationResult& r1,
                       std::string_view what) {
  std::set<std::string> items;
  for (const auto& n : r0.names()) items.insert(n);
  for (const auto& n : r1.names()) items.insert(n);
  items.insert("");
  std::set<std::string> sequence(keys.begin(), keys.end());
  std::vector<std::string> extra;
  for (const auto& k : sequence)
    if (!items.count(k)) extra.push_back(k);
  if (extra.empty()) return;
  // Python prints sets here ({'a', 'b'}); Parity sorts their elements.
  auto set_text = [](const auto& values) {
    std::string out = "{";
    bool first = true;
    for (const auto& v : values) {
      if (!first) out += ", ";
      out += python_str_repr(v);
      first = false;
    }
    return out + "}";
  };
  log::warning("Extra items in {}: {}.\nNote: items requested were: {}, but all items are: {}", what,
               set_text(extra), set_text(items), set_text(sequence));
}

void log_output_stats(const statistics::TensorSummary& summary, const TensorView* values,
                      const statistics::Histogram* histogram, bool failed, std::string_view label,
                      statistics::StatisticsStyle style) {
  log::info("{}", statistics::format_stats_line(summary, style, label));
  Logger::Indent indent;
  Severity severity = failed ? Severity::kInfo : Severity::kVerbose;
  if (!Logger::global().enabled(severity)) return;
  if (values && summary.size <= 100)
    log::at(severity, "---- Values ----\n{}", indent_block(numpy_array_str(*values)));
  if (summary.is_bool) {
    if (style == statistics::StatisticsStyle::kPolygraphy) log::at(severity, "");
    return;
  }
  if (!histogram) return;
  std::string text = statistics::format_histogram(*histogram);
  if (style == statistics::StatisticsStyle::kParity && (text.empty() || text == "None")) return;
  if (text.empty() && !histogram->error.empty())
    log::verbose("Could not generate histogram. Note: Error was: {}", histogram->error);
  log::at(severity, "{}", text);
}

IterationComparison run_comparison(const MatchFunc& match, bool fail_fast, const IterationResult& result0,
                                   const IterationResult& result1, const FindOutputFunc& find_output) {
  IterationComparison comparison;
  auto record = [&](OutputComparison&& result) {
    for (auto& existing : comparison.outputs)
      if (existing.output0 == result.output0) {
        existing = std::move(result);
        return;
      }
    comparison.outputs.push_back(std::move(result));
  };
  for (std::size_t index = 0; index < result0.outputs.size(); ++index) {
    const auto& [name0, out0] = result0.outputs[index];
    std::vector<std::string> names1 =
        find_output ? find_output(name0, index, result1) : default_find_output(name0, index, result1, result0);
    if (names1.size() > 1)
      log::info("Will attempt to compare output: '{}' [{}] with multiple outputs: '{}' [{}]", name0,
                result0.runner_name, python_list_repr(names1), result1.runner_name);
    for (const auto& name1 : names1) {
      const Tensor* out1 = result1.find(name1);
      if (!out1) {
        log::warning("For output: '{}' [{}], skipping corresponding output: '{}' [{}], since the output was not found",
                     name0, result0.runner_name, name1, result1.runner_name);
        continue;
      }
      log::start("Comparing Output: '{}' (dtype={}, shape={}) with '{}' (dtype={}, shape={})", name0,
                 dtype_text(out0.dtype()), shape_text(out0.shape()), name1, dtype_text(out1->dtype()),
                 shape_text(out1->shape()));
      OutputComparison result;
      {
        Logger::Indent indent;
        try {
          result = match(name0, out0, name1, *out1);
        } catch (const UnsupportedError& error) {
          // String/complex outputs, for instance: this output fails, the others are still compared.
          log::error("FAILED | Output: '{}' | Cannot compare these outputs: {}", name0, error.message());
          result = OutputComparison{};
          result.output0 = name0;
          result.output1 = name1;
          result.dtype0 = out0.dtype();
          result.dtype1 = out1->dtype();
          result.shape0 = out0.shape();
          result.shape1 = out1->shape();
          result.failure = error.message();
        }
      }
      bool passed = result.passed;
      record(std::move(result));
      if (fail_fast && !passed) return comparison;
    }
  }
  std::vector<std::string> mismatched = comparison.mismatched();
  if (!mismatched.empty()) {
    log::error("FAILED | Mismatched outputs: {}", python_list_repr(mismatched));
  } else {
    std::vector<std::string> names;
    for (const auto& o : comparison.outputs) names.push_back(o.output0);
    log::finish("PASSED | All outputs matched | Outputs: {}", python_list_repr(names));
  }
  if (comparison.outputs.empty() && (!result0.outputs.empty() || !result1.outputs.empty())) {
    std::string message = fmt::format(
        "All outputs were skipped, no common outputs found! Note:\n{} outputs: {}\n{} outputs: {}", result0.runner_name,
        python_list_repr(result0.names()), result1.runner_name, python_list_repr(result1.names()));
    log::at(Severity::kCritical, "{}", message);
    throw InvalidInputError(message);
  }
  return comparison;
}

}  // namespace detail
}  // namespace parity::compare
