// `parity run`'s dataset validation flags (docs/dataset-validation.md): --dataset (a folder of
// .npz files or a script with num_samples() and load(i)), --workers, --ray, --sample-timeout, --worst-samples,
// --save-worst, --metric-script, --sample-results. With --dataset the run validates every sample
// (or the first --iterations) and reports over the whole dataset instead of per iteration.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/compare/compare_func.h"
#include "parity/runtime/runner.h"

namespace parity::cli {

// Makes the run's live runners (in the process that calls it).
using RunnerFactory = std::function<std::vector<std::unique_ptr<runtime::Runner>>()>;

class DatasetArgs {
 public:
  void add_to(CLI::App& app);
  // Checks the values and the flags --dataset cannot go with (before anything runs).
  void parse();
  bool given() const { return !dataset_.empty(); }

  // Whether this process is a dataset worker started by a driver (PARITY_DATASET_WORKER is set).
  static bool is_worker();
  // In a worker: keeps standard output for the records and sends what else is written there to
  // standard error. Call before anything is logged.
  static void claim_standard_output();

  // Runs the validation: in this process, in --workers worker processes or on Ray actors (--ray), and returns whether
  // every sample passed. In a worker, serves samples instead and returns true.
  bool run(const RunnerFactory& make_runners, const compare::CompareFunc& compare_func, bool fail_fast,
           const std::string& report_path);

 private:
  std::size_t sample_count(std::size_t dataset_size) const;
  // The arguments a worker or Ray actor starts parity with: this process's, with --threads set to
  // this process's compute thread count when it was not given, and for `local` workers (this
  // machine's --workers) ONNX Runtime's and OpenVINO's threads set to a share of the cores.
  std::vector<std::string> worker_arguments(bool local) const;
  // --sample-timeout, when given.
  std::optional<std::chrono::milliseconds> sample_timeout() const;

  CLI::App* app_ = nullptr;
  std::string dataset_;
  int workers_ = 0;  // 0: in this process (with --ray: one actor per CPU of the cluster)
  std::string ray_address_;  // --ray's value; empty with --ray alone: a local cluster
  double sample_timeout_ = 0;  // --sample-timeout, seconds
  int worst_count_ = 5;
  std::string save_worst_;
  std::string metric_script_;
  std::string sample_results_;
};

}  // namespace parity::cli
