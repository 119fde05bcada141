#include "args/dataset_args.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "args/metric_script.h"
#include "args/python_scripts.h"
#include "parity/compare/dataset_ray.h"
#include "parity/compare/dataset_validation.h"
#include "parity/compare/dataset_worker_pool.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/core/python_interpreter.h"
#include "parity/core/thread_pool.h"
#include "parity/runtime/dataset_source.h"

namespace parity::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWorkerVariable = "PARITY_DATASET_WORKER";
// In a worker, standard output as it was when the worker started: the records' pipe.
int g_records_descriptor = -1;

// Logs progress at most every two seconds, and once at the end.
class Progress {
 public:
  explicit Progress(std::size_t samples) : samples_(samples), start_(Clock::now()), last_(start_) {}

  void update(const compare::DatasetSummary& summary, bool final = false) {
    const auto now = Clock::now();
    if (!final && now - last_ < std::chrono::seconds(2)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(summary.done()) / seconds : 0;
    const double eta = rate > 0 ? static_cast<double>(samples_ - summary.done()) / rate : 0;
    log::info("Dataset progress | {}/{} samples | {:.1f} samples/s | ETA {:.0f}s | Failed: {} (errors: {})",
              summary.done(), samples_, rate, eta, summary.failed(), summary.errors());
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::size_t samples_;
  Clock::time_point start_, last_;
};

// The arguments this process was started with (to start workers with the same ones).
std::vector<std::string> own_arguments() {
  std::string text = read_file("/proc/self/cmdline");
  std::vector<std::string> arguments;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    arguments.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (!arguments.empty()) arguments.erase(arguments.begin());
  return arguments;
}

}  // namespace

std::optional<std::chrono::milliseconds> DatasetArgs::sample_timeout() const {
  if (!app_->count("--sample-timeout")) return std::nullopt;
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(sample_timeout_ * 1000)));
}

std::vector<std::string> DatasetArgs::worker_arguments(bool local) const {
  std::vector<std::string> arguments = own_arguments();
  const bool onnxrt = std::count(arguments.begin(), arguments.end(), "--onnxrt") > 0;
  const bool openvino = std::count(arguments.begin(), arguments.end(), "--openvino") > 0;
  if (!app_->count("--threads")) {
    arguments.push_back("--threads");
    arguments.push_back(std::to_string(compute_threads()));
  }
  // N local workers share this machine's cores: each backend's own thread pool gets its share unless
  // the user set it (one process's default of every core, N times over, ran --workers 2 at 0.81x of
  // one process on 2 cores; 1.48x with a core each). ONNX Runtime's and OpenVINO's results do not
  // depend on their thread counts as the reference's BLAS may, so the verdicts stay the same.
  if (local && workers_ > 0) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const std::string share = std::to_string(std::max(1u, cores / static_cast<unsigned>(workers_)));
    for (const auto& [used, flag] : {std::pair{onnxrt, "--ort-intra-op-threads"}, std::pair{openvino, "--ov-threads"}})
      if (used && !app_->count(flag)) {
        arguments.push_back(flag);
        arguments.push_back(share);
      }
  }
  return arguments;
}

void DatasetArgs::add_to(CLI::App& app) {
  const char* group = "Dataset Validation";
  app.add_option("--dataset", dataset_,
                 "Validate over a dataset that can be split (docs/dataset-validation.md): a folder of .npz files (one "
                 "sample each, in file name order) or a Python script defining num_samples() and load(i); every "
                 "sample, or the first --iterations, is run and judged, and one report covers the whole dataset")
      ->group(group);
  app.add_option("--workers", workers_,
                 "--dataset: run the runners in this many worker processes on this machine (default: in this "
                 "process)")
      ->group(group);
  app.add_option("--ray", ray_address_,
                 "--dataset: run the runners as Ray actors, on the cluster whose head is at ADDRESS (HOST:PORT, or "
                 "'auto'), or without ADDRESS on a local cluster that ray.init() starts; --workers: how many actors "
                 "(default: one per CPU of the cluster). Paths must be the same on every node")
      ->expected(0, 1)
      ->type_name("[ADDRESS]")
      ->group(group);
  app.add_option("--sample-timeout", sample_timeout_,
                 "--workers, --ray: seconds a worker may take over one sample; past them the worker is killed (with "
                 "the programs it started) and restarted, and the sample recorded as failed (default: no limit)")
      ->type_name("SECONDS")
      ->group(group);
  app.add_option("--worst-samples", worst_count_, "--dataset: how many of the worst samples to list (default 5)")
      ->group(group);
  app.add_option("--save-worst", save_worst_,
                 "--dataset: save the worst samples' inputs (sample_<i>_inputs.json, for --load-inputs) and every "
                 "runner's outputs (sample_<i>_outputs.json, for --load-outputs) in this folder")
      ->group(group);
  app.add_option("--metric-script", metric_script_,
                 "--dataset: file.py[:func] (default function `metric`): a task metric func(result0, result1, feed) "
                 "-> number or {name: number} per sample and pair of runners, averaged over the dataset")
      ->group(group);
  app.add_option("--sample-results", sample_results_,
                 "--dataset: write each sample's verdict as one JSON line to this file, in the order samples finish")
      ->group(group);
  app_ = &app;
}

void DatasetArgs::parse() {
  const bool dataset_flags = app_->count("--workers") || app_->count("--ray") || app_->count("--sample-timeout") ||
                             app_->count("--worst-samples") ||
                             app_->count("--save-worst") || app_->count("--metric-script") ||
                             app_->count("--sample-results");
  if (!given()) {
    if (dataset_flags)
      raise<InvalidInputError>("--workers, --ray, --sample-timeout, --worst-samples, --save-worst, --metric-script and "
                               "--sample-results validate over a dataset: give --dataset");
    return;
  }
  if (app_->count("--workers") && workers_ < 1) raise<InvalidInputError>("--workers must be at least 1");
  if (worst_count_ < 0) raise<InvalidInputError>("--worst-samples must be at least 0");
  if (app_->count("--sample-timeout")) {
    if (!(sample_timeout_ > 0) || sample_timeout_ > 1e7)
      raise<InvalidInputError>("--sample-timeout must be a number of seconds above 0 and at most 1e7, got {}",
                               sample_timeout_);
    if (!app_->count("--workers") && !app_->count("--ray"))
      raise<InvalidInputError>("--sample-timeout stops a worker that hangs on a sample: give --workers or --ray (a "
                               "sample running in this process cannot be stopped)");
  }
  if (!metric_script_.empty()) {
    const ScriptSpec script = parse_script_spec(metric_script_, "metric");
    std::error_code error;
    if (!fs::is_regular_file(script.path, error)) raise<FileError>("--metric-script {}: no such file", script.path);
  }
  for (const char* flag : {"--load-inputs", "--data-loader-script", "--save-inputs", "--save-outputs", "--load-outputs",
                           "--onnx-outputs", "--onnx-exclude-outputs", "--use-subprocess", "--compare-to",
                           "--postprocess", "--validate", "--warm-up", "--gen-script", "--save-onnx", "--int8",
                           "--attribute", "--report-html", "--save-heatmaps", "--show-heatmaps",
                           "--save-error-metrics-plot", "--show-error-metrics-plot", "--save-model-explorer-overlay"})
    if (app_->count(flag))
      raise<InvalidInputError>("--dataset {}: {} cannot be used with --dataset (the dataset is the data; samples are "
                               "compared runner by adjacent runner on their graph outputs)",
                               dataset_, flag);
}

bool DatasetArgs::is_worker() { return std::getenv(kWorkerVariable) != nullptr; }

void DatasetArgs::claim_standard_output() {
  std::fflush(stdout);
  g_records_descriptor = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  // The driver's log is the run's; a worker's shows only what goes wrong.
  Logger::global().set_severity(Severity::kWarning);
}

std::size_t DatasetArgs::sample_count(std::size_t dataset_size) const {
  if (!app_->count("--iterations")) return dataset_size;
  const int iterations = app_->get_option("--iterations")->as<int>();
  if (iterations < 1) raise<InvalidInputError>("--iterations must be at least 1 with --dataset");
  if (static_cast<std::size_t>(iterations) > dataset_size)
    raise<InvalidInputError>("--dataset {} has {} sample(s), fewer than --iterations {}", dataset_, dataset_size,
                             iterations);
  return static_cast<std::size_t>(iterations);
}

bool DatasetArgs::run(const RunnerFactory& make_runners, const compare::CompareFunc& compare_func, bool fail_fast,
                      const std::string& report_path) {
  // The metric runs where the samples run: in this process, or in each worker.
  compare::MetricFunc metrics;
  if (!metric_script_.empty() && (is_worker() || (workers_ == 0 && !app_->count("--ray"))))
    metrics = metric_script(parse_script_spec(metric_script_, "metric"));
  auto dataset = runtime::open_dataset(dataset_, configured_python());

  // Every executor computes with one thread count (the reference kernels' BLAS results can change
  // with it): this one's (--threads, else this machine's hardware threads), pinned here whatever
  // OMP_NUM_THREADS or OPENBLAS_NUM_THREADS say, and given to every worker and Ray actor as
  // --threads (worker_arguments), which applies it the same way.
  if (!is_worker()) set_compute_threads(compute_threads());

  if (is_worker()) {
    auto runners = make_runners();
    std::vector<runtime::Runner*> pointers;
    for (auto& runner : runners) pointers.push_back(runner.get());
    compare::SampleValidator validator(pointers, compare_func, metrics);
    compare::serve_samples(*dataset, validator, STDIN_FILENO, g_records_descriptor);
    return true;
  }

  const std::size_t samples = sample_count(dataset->size());
  const bool on_ray = app_->count("--ray") > 0;
  log::info("Validating {} sample(s) of {} {}", samples, dataset->describe(),
            on_ray ? fmt::format("on Ray ({})", ray_address_.empty() ? "a local cluster" : ray_address_)
            : workers_ > 0 ? fmt::format("in {} worker process(es)", workers_)
                           : std::string("in this process"));
  compare::DatasetSummary summary(samples, static_cast<std::size_t>(worst_count_));
  Progress progress(samples);
  std::optional<std::ofstream> sample_results;
  if (!sample_results_.empty()) {
    sample_results.emplace(sample_results_);
    if (!*sample_results) raise<FileError>("--sample-results {}: cannot write the file", sample_results_);
  }
  auto on_record = [&](const compare::SampleRecord& record) {
    summary.add(record);
    if (sample_results) *sample_results << record.verdict_json().dump() << '\n';
    progress.update(summary);
    if (fail_fast && !record.passed) {
      log::error("Sample {} failed{}: stopping (--fail-fast)", record.index,
                 record.error.empty() ? "" : ": " + record.error);
      return false;
    }
    return true;
  };

  std::vector<std::unique_ptr<runtime::Runner>> runners;
  std::unique_ptr<compare::SampleValidator> validator;
  auto local_validator = [&]() -> compare::SampleValidator& {
    if (!validator) {
      runners = make_runners();
      std::vector<runtime::Runner*> pointers;
      for (auto& runner : runners) pointers.push_back(runner.get());
      validator = std::make_unique<compare::SampleValidator>(pointers, compare_func, metrics);
    }
    return *validator;
  };

  if (on_ray) {
    compare::RayOptions options;
    options.address = ray_address_;
    options.python = configured_python();
    options.program = fs::read_symlink("/proc/self/exe").string();
    options.arguments = worker_arguments(/*local=*/false);
    options.folder = fs::current_path().string();
    options.actors = static_cast<std::size_t>(workers_);
    options.sample_timeout = sample_timeout();
    compare::run_on_ray(options, samples, on_record);
  } else if (workers_ > 0) {
    compare::WorkerPoolOptions options;
    options.worker.program = fs::read_symlink("/proc/self/exe").string();
    options.worker.arguments = worker_arguments(/*local=*/true);
    options.worker.environment = {{kWorkerVariable, "1"}};
    options.workers = static_cast<std::size_t>(workers_);
    options.sample_timeout = sample_timeout();
    compare::run_worker_pool(options, samples, on_record);
  } else {
    for (std::size_t index = 0; index < samples; ++index) {
      compare::SampleRecord record;
      std::optional<NamedTensors> feed;
      try {
        feed = dataset->load(index);
      } catch (const Error& error) {
        record.index = index;
        record.error = error.what();
      }
      if (feed) record = local_validator().validate(index, *feed);
      if (!on_record(record)) break;
    }
  }
  progress.update(summary, /*final=*/true);
  if (sample_results) {
    sample_results->close();
    log::info("Saved per-sample results to {}", sample_results_);
  }
  summary.log_report();

  if (!save_worst_.empty() && !summary.worst().empty()) {
    fs::create_directories(save_worst_);
    for (const auto& [index, error] : summary.worst()) {
      NamedTensors feed = dataset->load(index);
      const fs::path inputs = fs::path(save_worst_) / fmt::format("sample_{}_inputs.json", index);
      const fs::path outputs = fs::path(save_worst_) / fmt::format("sample_{}_outputs.json", index);
      save_inputs_json(inputs, {feed});
      compare::save_run_results(outputs, local_validator().run(feed));
    }
    log::info("Saved the {} worst sample(s)' inputs and outputs to {}", summary.worst().size(), save_worst_);
  }
  if (!report_path.empty()) {
    write_file_atomic(report_path, summary.to_json().dump(2) + "\n");
    log::info("Saved report to {}", report_path);
  }
  return summary.all_passed();
}

}  // namespace parity::cli
