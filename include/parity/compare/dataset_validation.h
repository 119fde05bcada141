// Validation over a whole dataset: each sample run through every runner and judged on its own
// (a SampleRecord, small enough to cross a pipe as one JSON line), and the records merged, in
// whatever order they arrive, into one DatasetSummary whose memory does not grow with the number
// of samples (per output ErrorSummary, per metric an exact sum, the K worst samples).
// docs/dataset-validation.md describes the report.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/accuracy.h"
#include "parity/compare/compare_func.h"
#include "parity/compare/dataset_statistics.h"
#include "parity/runtime/runner.h"

namespace parity::compare {

struct OutputRecord {
  std::string name;
  bool passed = false;
  bool compared = false;
  std::string failure;
  ErrorSummary absolute, relative;  // |out0 - out1| and |out0 - out1| / |out1|, elementwise
};

struct PairRecord {
  std::string runner0, runner1;
  std::vector<OutputRecord> outputs;
  std::vector<std::pair<std::string, double>> metrics;  // --metric-script: name -> value
};

struct SampleRecord {
  std::size_t index = 0;
  bool passed = false;
  std::string error;  // a runner (or loading the sample) raised: the sample failed, not compared
  std::vector<PairRecord> pairs;  // adjacent runners, in order
  std::string metric_error;                             // the metric script raised on this sample

  // The largest absolute difference of any output (-inf when none was measured).
  double worst_error() const;
  nlohmann::json to_json() const;
  static SampleRecord from_json(const nlohmann::json& json);
  // The line --sample-results writes: index, verdict, error and each output's verdict and maximum.
  nlohmann::json verdict_json() const;
};

// User task metrics for one pair of results of one sample: name -> value. Throwing records the
// sample's metric error; the sample's verdict is unaffected.
using MetricFunc = std::function<std::vector<std::pair<std::string, double>>(
    const IterationResult&, const IterationResult&, const NamedTensors& feed)>;

// Runs samples through runners it activates once (each stays active for the validator's life) and
// judges them with `compare_func`, pairing adjacent runners as Polygraphy does. The comparison
// function's own log lines are kept quiet: a dataset has too many samples to log each.
class SampleValidator {
 public:
  SampleValidator(std::vector<runtime::Runner*> runners, CompareFunc compare_func, MetricFunc metrics = {});
  ~SampleValidator();
  SampleValidator(const SampleValidator&) = delete;
  SampleValidator& operator=(const SampleValidator&) = delete;

  // A runner that raises makes a record with `error` set; nothing is thrown for it.
  SampleRecord validate(std::size_t index, const NamedTensors& feed);
  // Every runner's outputs for the feed (for saving a sample's results).
  RunResults run(const NamedTensors& feed);

 private:
  std::vector<runtime::Runner*> runners_;
  std::vector<std::unique_ptr<runtime::ActiveRunner>> active_;
  CompareFunc compare_func_;
  MetricFunc metrics_;
};

// Records merged into the dataset's report.
class DatasetSummary {
 public:
  explicit DatasetSummary(std::size_t samples, std::size_t worst_count = 5);

  // Merges one record. Throws InternalError for a sample merged before (every sample counts once).
  void add(const SampleRecord& record);

  std::size_t samples() const { return samples_; }
  std::size_t done() const { return done_; }
  std::size_t passed() const { return passed_; }
  std::size_t failed() const { return done_ - passed_; }
  std::size_t errors() const { return errors_; }
  bool all_passed() const { return done_ == samples_ && passed_ == samples_; }
  // The worst samples, worst first: failed before passed, then by worst_error().
  std::vector<std::pair<std::size_t, double>> worst() const;

  // Logs the report (per comparison and output: pass count and the error statistics; metrics;
  // errors; worst samples).
  void log_report() const;
  nlohmann::ordered_json to_json() const;

 private:
  struct OutputTotals {
    std::size_t passed = 0, failed = 0, not_compared = 0;
    ErrorSummary absolute, relative;
  };
  struct MetricTotals {
    ExactSum sum;
    std::size_t count = 0, errors = 0;
  };
  struct Worst {
    bool failed;
    double error;
    std::size_t index;
  };

  std::size_t samples_, worst_count_;
  std::size_t done_ = 0, passed_ = 0, errors_ = 0, metric_errors_ = 0;
  std::vector<bool> seen_;  // one bit a sample
  // Per pair of adjacent runners, by position (each process names its runners with its own start
  // time), labelled "<runner0> vs. <runner1>" from the first record: outputs and metrics by name,
  // in first-seen order.
  struct PairTotals {
    std::string label;
    std::vector<std::pair<std::string, OutputTotals>> outputs;
    std::vector<std::pair<std::string, MetricTotals>> metrics;
  };
  std::vector<PairTotals> pairs_;
  std::vector<std::pair<std::size_t, std::string>> first_errors_, first_metric_errors_;  // up to 10 each
  std::vector<Worst> worst_;  // at most worst_count_, worst first
};

}  // namespace parity::compare
