#include "parity/compare/dataset_validation.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "parity/core/dtype_dispatch.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/python_format.h"

namespace parity::compare {
namespace {

constexpr std::size_t kErrorsKept = 10;

// Keeps the log quiet while alive: per-sample comparison blocks would bury the report.
class QuietLog {
 public:
  QuietLog() : severity_(Logger::global().severity()) { Logger::global().set_severity(Severity::kCritical); }
  ~QuietLog() { Logger::global().set_severity(severity_); }

 private:
  Severity severity_;
};

std::vector<double> as_doubles(const Tensor& tensor) {
  std::vector<double> values;
  visit_dtype<NumericAndBoolTypes>(
      tensor.dtype(),
      [&]<typename T>() {
        values.reserve(static_cast<std::size_t>(tensor.size()));
        for (const T& value : tensor.span<T>()) {
          if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
            values.push_back(static_cast<double>(static_cast<float>(value)));
          else values.push_back(static_cast<double>(value));
        }
      },
      [] {});
  return values;
}

OutputRecord measure(const OutputComparison& comparison, const IterationResult& r0, const IterationResult& r1,
                     std::size_t sample) {
  OutputRecord record;
  record.name = comparison.output0;
  record.passed = comparison.passed;
  record.compared = comparison.compared;
  record.failure = comparison.failure;
  const Tensor* t0 = r0.find(comparison.output0);
  const Tensor* t1 = r1.find(comparison.output1);
  if (!t0 || !t1 || t0->size() != t1->size()) return record;
  const std::vector<double> a = as_doubles(*t0), b = as_doubles(*t1);
  if (a.size() != static_cast<std::size_t>(t0->size()) || b.size() != a.size()) return record;
  std::vector<double> absolute(a.size()), relative(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    absolute[i] = std::fabs(a[i] - b[i]);
    relative[i] = absolute[i] / std::fabs(b[i]);
  }
  record.absolute = ErrorSummary::of_sample(absolute, sample);
  record.relative = ErrorSummary::of_sample(relative, sample);
  return record;
}

nlohmann::json output_to_json(const OutputRecord& output) {
  return {{"name", output.name},         {"passed", output.passed},
          {"compared", output.compared}, {"failure", output.failure},
          {"absolute", output.absolute.to_json()}, {"relative", output.relative.to_json()}};
}

std::string format_number(double value) { return std::isnan(value) ? "nan" : python_float_repr(value); }

}  // namespace

double SampleRecord::worst_error() const {
  double worst = -INFINITY;
  for (const auto& pair : pairs)
    for (const auto& output : pair.outputs)
      if (output.absolute.count) worst = std::max(worst, output.absolute.max);
  return worst;
}

nlohmann::json SampleRecord::to_json() const {
  nlohmann::json pairs_json = nlohmann::json::array();
  for (const auto& pair : pairs) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const auto& output : pair.outputs) outputs.push_back(output_to_json(output));
    nlohmann::json metrics_json = nlohmann::json::array();
    for (const auto& [name, value] : pair.metrics) metrics_json.push_back({name, value});
    pairs_json.push_back({{"runner0", pair.runner0},
                          {"runner1", pair.runner1},
                          {"outputs", std::move(outputs)},
                          {"metrics", std::move(metrics_json)}});
  }
  return {{"index", index},
          {"passed", passed},
          {"error", error},
          {"pairs", std::move(pairs_json)},
          {"metric_error", metric_error}};
}

SampleRecord SampleRecord::from_json(const nlohmann::json& json) {
  SampleRecord record;
  record.index = json.at("index").get<std::size_t>();
  record.passed = json.at("passed").get<bool>();
  record.error = json.at("error").get<std::string>();
  for (const auto& pair_json : json.at("pairs")) {
    PairRecord pair{pair_json.at("runner0").get<std::string>(), pair_json.at("runner1").get<std::string>(), {}, {}};
    for (const auto& output_json : pair_json.at("outputs")) {
      OutputRecord output;
      output.name = output_json.at("name").get<std::string>();
      output.passed = output_json.at("passed").get<bool>();
      output.compared = output_json.at("compared").get<bool>();
      output.failure = output_json.at("failure").get<std::string>();
      output.absolute = ErrorSummary::from_json(output_json.at("absolute"));
      output.relative = ErrorSummary::from_json(output_json.at("relative"));
      pair.outputs.push_back(std::move(output));
    }
    for (const auto& metric : pair_json.at("metrics"))
      pair.metrics.emplace_back(metric.at(0).get<std::string>(), metric.at(1).get<double>());
    record.pairs.push_back(std::move(pair));
  }
  record.metric_error = json.at("metric_error").get<std::string>();
  return record;
}

nlohmann::json SampleRecord::verdict_json() const {
  nlohmann::json outputs = nlohmann::json::array();
  nlohmann::json metrics_json = nlohmann::json::array();
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    for (const auto& output : pairs[p].outputs) {
      nlohmann::json entry{{"pair", p}, {"output", output.name}, {"passed", output.passed}};
      if (output.absolute.count) entry["max_absolute"] = output.absolute.max;
      outputs.push_back(std::move(entry));
    }
    for (const auto& [name, value] : pairs[p].metrics) metrics_json.push_back({{"pair", p}, {name, value}});
  }
  return {{"index", index}, {"passed", passed}, {"error", error}, {"outputs", std::move(outputs)},
          {"metrics", std::move(metrics_json)}, {"metric_error", metric_error}};
}

// ---- SampleValidator ----

SampleValidator::SampleValidator(std::vector<runtime::Runner*> runners, CompareFunc compare_func, MetricFunc metrics)
    : runners_(std::move(runners)), compare_func_(std::move(compare_func)), metrics_(std::move(metrics)) {
  for (auto* runner : runners_) active_.push_back(std::make_unique<runtime::ActiveRunner>(*runner));
}

SampleValidator::~SampleValidator() = default;

RunResults SampleValidator::run(const NamedTensors& feed) {
  RunResults results;
  for (auto* runner : runners_) {
    IterationResult result;
    result.runner_name = runner->name();
    result.outputs = runner->infer(feed);
    result.runtime = runner->last_inference_time();
    results.push_back({runner->name(), {std::move(result)}});
  }
  return results;
}

SampleRecord SampleValidator::validate(std::size_t index, const NamedTensors& feed) {
  SampleRecord record;
  record.index = index;
  RunResults results;
  try {
    QuietLog quiet;
    results = run(feed);
  } catch (const Error& error) {
    record.error = error.what();
    return record;
  }
  record.passed = true;
  for (std::size_t i = 0; i + 1 < results.size(); ++i) {
    const IterationResult& r0 = results[i].iterations[0];
    const IterationResult& r1 = results[i + 1].iterations[0];
    IterationComparison comparison;
    {
      QuietLog quiet;
      comparison = compare_func_(r0, r1);
    }
    PairRecord pair{r0.runner_name, r1.runner_name, {}, {}};
    for (const auto& output : comparison.outputs) pair.outputs.push_back(measure(output, r0, r1, index));
    record.passed = record.passed && comparison.passed();
    if (metrics_) {
      try {
        QuietLog quiet;
        pair.metrics = metrics_(r0, r1, feed);
      } catch (const Error& error) {
        record.metric_error = error.what();
      }
    }
    record.pairs.push_back(std::move(pair));
  }
  return record;
}

// ---- DatasetSummary ----

DatasetSummary::DatasetSummary(std::size_t samples, std::size_t worst_count)
    : samples_(samples), worst_count_(worst_count), seen_(samples, false) {}

void DatasetSummary::add(const SampleRecord& record) {
  if (record.index >= samples_ || seen_[record.index])
    raise<InternalError>("dataset validation: sample {} merged twice or out of range ({} samples)", record.index,
                         samples_);
  seen_[record.index] = true;
  ++done_;
  if (record.passed) ++passed_;
  if (!record.error.empty()) {
    ++errors_;
    if (first_errors_.size() < kErrorsKept) first_errors_.emplace_back(record.index, record.error);
  }
  if (!record.metric_error.empty()) {
    ++metric_errors_;
    if (first_metric_errors_.size() < kErrorsKept) first_metric_errors_.emplace_back(record.index, record.metric_error);
  }
  for (std::size_t p = 0; p < record.pairs.size(); ++p) {
    const PairRecord& pair = record.pairs[p];
    if (p == pairs_.size()) pairs_.push_back({fmt::format("{} vs. {}", pair.runner0, pair.runner1), {}, {}});
    PairTotals& pair_totals = pairs_[p];
    for (const auto& output : pair.outputs) {
      auto& outputs = pair_totals.outputs;
      auto it = std::find_if(outputs.begin(), outputs.end(),
                             [&](const auto& entry) { return entry.first == output.name; });
      if (it == outputs.end()) it = outputs.insert(outputs.end(), {output.name, {}});
      OutputTotals& totals = it->second;
      if (!output.compared) ++totals.not_compared;
      else if (output.passed) ++totals.passed;
      else ++totals.failed;
      totals.absolute.merge(output.absolute);
      totals.relative.merge(output.relative);
    }
    for (const auto& [name, value] : pair.metrics) {
      auto& metrics = pair_totals.metrics;
      auto it = std::find_if(metrics.begin(), metrics.end(), [&](const auto& entry) { return entry.first == name; });
      if (it == metrics.end()) it = metrics.insert(metrics.end(), {name, {}});
      if (std::isfinite(value)) {
        it->second.sum.add(value);
        ++it->second.count;
      } else {
        ++it->second.errors;
      }
    }
  }
  if (record.error.empty()) {
    // Worst first: failed before passed, then the larger error, then the lower index (a total order,
    // so the list does not depend on the order records arrive in).
    Worst entry{!record.passed, record.worst_error(), record.index};
    auto worse = [](const Worst& a, const Worst& b) {
      if (a.failed != b.failed) return a.failed;
      if (a.error != b.error) return a.error > b.error;
      return a.index < b.index;
    };
    auto at = std::lower_bound(worst_.begin(), worst_.end(), entry, worse);
    if (static_cast<std::size_t>(at - worst_.begin()) < worst_count_) {
      worst_.insert(at, entry);
      if (worst_.size() > worst_count_) worst_.pop_back();
    }
  }
}

std::vector<std::pair<std::size_t, double>> DatasetSummary::worst() const {
  std::vector<std::pair<std::size_t, double>> out;
  for (const auto& entry : worst_) out.emplace_back(entry.index, entry.error);
  return out;
}

namespace {

std::string sample_of(std::size_t sample) {
  return sample == ErrorSummary::kNoSample ? "" : fmt::format(" (sample {})", sample);
}

void log_summary(const char* title, const ErrorSummary& summary) {
  if (!summary.count) {
    log::info("{} | no finite values{}", title,
              summary.nonfinite ? fmt::format(" ({} NaN or infinite)", summary.nonfinite) : "");
    return;
  }
  log::info("{} | Stats: mean={}, std-dev={}, var={}, min={}{}, max={}{}", title, format_number(summary.mean()),
            format_number(std::sqrt(summary.variance())), format_number(summary.variance()),
            format_number(summary.min), sample_of(summary.min_sample), format_number(summary.max),
            sample_of(summary.max_sample));
  log::info("{} | Sketch (within {:g}%): median~{}, p90~{}, p95~{}, p99~{}{}", title,
            100 * kQuantileSketchAccuracy, format_number(summary.quantile(0.5)), format_number(summary.quantile(0.9)),
            format_number(summary.quantile(0.95)), format_number(summary.quantile(0.99)),
            summary.nonfinite ? fmt::format(" | {} NaN or infinite", summary.nonfinite) : "");
  Logger::Indent indent;
  const double total = static_cast<double>(summary.count);
  if (summary.zeros) log::info("{:>15} | {:>10} | {:5.1f}%", "0", summary.zeros, 100 * summary.zeros / total);
  for (const auto& [decade, count] : summary.decades)
    log::info("[1e{:+03d}, 1e{:+03d}) | {:>10} | {:5.1f}%", decade, decade + 1, count, 100 * count / total);
}

nlohmann::ordered_json summary_json(const ErrorSummary& summary) {
  nlohmann::ordered_json out;
  out["count"] = summary.count;
  out["nonfinite"] = summary.nonfinite;
  if (summary.count) {
    out["mean"] = summary.mean();
    out["variance"] = summary.variance();
    out["std_dev"] = std::sqrt(summary.variance());
    out["min"] = summary.min;
    out["min_sample"] = summary.min_sample;
    out["max"] = summary.max;
    out["max_sample"] = summary.max_sample;
    out["sketch_relative_accuracy"] = kQuantileSketchAccuracy;
    for (auto [name, q] : {std::pair{"median", 0.5}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}})
      out[name] = summary.quantile(q);
  }
  nlohmann::ordered_json histogram = nlohmann::ordered_json::array();
  if (summary.zeros) histogram.push_back({{"decade", nullptr}, {"count", summary.zeros}});
  for (const auto& [decade, count] : summary.decades) histogram.push_back({{"decade", decade}, {"count", count}});
  out["histogram"] = std::move(histogram);
  return out;
}

}  // namespace

void DatasetSummary::log_report() const {
  log::info("Dataset Summary | {} of {} samples | Passed: {} | Failed: {} (errors: {}) | Pass Rate: {}%", done_,
            samples_, passed_, failed(), errors_,
            done_ ? python_float_repr(100.0 * static_cast<double>(passed_) / static_cast<double>(done_)) : "0.0");
  for (const auto& pair : pairs_)
    for (const auto& [name, totals] : pair.outputs) {
      log::info("{} | Output: '{}' | Passed: {} | Failed: {}{}", pair.label, name, totals.passed, totals.failed,
                totals.not_compared ? fmt::format(" | Not compared: {}", totals.not_compared) : "");
      Logger::Indent indent;
      log_summary("Absolute Difference", totals.absolute);
      log_summary("Relative Difference", totals.relative);
    }
  for (const auto& pair : pairs_)
    for (const auto& [name, totals] : pair.metrics)
      log::info("Metric | {} | {} | mean={} over {} samples{}", pair.label, name,
              totals.count ? format_number(totals.sum.value() / static_cast<double>(totals.count)) : "nan",
              totals.count, totals.errors ? fmt::format(" ({} not finite)", totals.errors) : "");
  if (metric_errors_) {
    log::warning("The metric script raised on {} sample(s):", metric_errors_);
    for (const auto& [index, message] : first_metric_errors_) log::warning("    sample {}: {}", index, message);
  }
  if (errors_) {
    log::error("{} sample(s) failed with an error:", errors_);
    for (const auto& [index, message] : first_errors_) log::error("    sample {}: {}", index, message);
  }
  if (!worst_.empty()) {
    std::vector<std::string> entries;
    for (const auto& entry : worst_)
      entries.push_back(fmt::format("{} ({}, max abs {})", entry.index, entry.failed ? "failed" : "passed",
                                    format_number(entry.error)));
    log::info("Worst samples: {}", fmt::join(entries, ", "));
  }
}

nlohmann::ordered_json DatasetSummary::to_json() const {
  nlohmann::ordered_json out;
  out["samples"] = samples_;
  out["done"] = done_;
  out["passed"] = passed_;
  out["failed"] = failed();
  out["errors"] = errors_;
  out["pass_rate"] = done_ ? static_cast<double>(passed_) / static_cast<double>(done_) : 0.0;
  nlohmann::ordered_json comparisons = nlohmann::ordered_json::array();
  nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
  for (const auto& pair : pairs_) {
    for (const auto& [name, totals] : pair.outputs)
      comparisons.push_back({{"pair", pair.label},
                             {"output", name},
                             {"passed", totals.passed},
                             {"failed", totals.failed},
                             {"not_compared", totals.not_compared},
                             {"absolute", summary_json(totals.absolute)},
                             {"relative", summary_json(totals.relative)}});
    for (const auto& [name, totals] : pair.metrics)
      metrics.push_back({{"pair", pair.label},
                         {"metric", name},
                         {"mean", totals.count ? totals.sum.value() / static_cast<double>(totals.count) : 0.0},
                         {"sum", totals.sum.value()},
                         {"count", totals.count},
                         {"not_finite", totals.errors}});
  }
  out["outputs"] = std::move(comparisons);
  out["metrics"] = std::move(metrics);
  out["metric_errors"] = metric_errors_;
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (const auto& [index, message] : first_errors_) errors.push_back({{"sample", index}, {"error", message}});
  out["first_errors"] = std::move(errors);
  nlohmann::ordered_json worst = nlohmann::ordered_json::array();
  for (const auto& entry : worst_)
    worst.push_back({{"sample", entry.index}, {"failed", entry.failed}, {"max_absolute", entry.error}});
  out["worst"] = std::move(worst);
  return out;
}

}  // namespace parity::compare
