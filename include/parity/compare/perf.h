// Performance mode (`parity run --perf`, the Python API's Comparator.run(perf=...)): each runner's
// latency distribution, throughput, host memory and, where the backend can report it, the time of
// each layer.
//
//   PerfRun run = measure_performance(runners, data_loader, options);
//
// Each runner in order: host memory read (the peak resident set reset where Linux allows it),
// activated, the feeds made once from the first runner's input metadata (reused by every runner,
// so no data loading is timed), one untimed inference per feed whose outputs are kept for the
// comparison, `warm_up` untimed inferences, then the timed inferences (`iterations`, or until
// `duration` seconds have passed), cycling through the feeds; the peak memory read; with
// `layer_inferences` > 0 the backend's profiler over the first feed (after the timed inferences,
// so profiling never slows them); deactivated. The timed region of one inference is
// Runner::infer(): feed validation, the backend's run and its outputs handed back as tensors
// (docs/perf.md says what that includes per backend).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity/compare/comparator.h"
#include "parity/runtime/layer_profile.h"

namespace parity::compare {

struct PerfOptions {
  int warm_up = 0;
  // Timed inferences; when `duration` is set, inferences run until that many seconds have passed
  // instead (at least one).
  int iterations = 10;
  std::optional<double> duration;
  // Inferences the per-layer profile averages over; 0: no per-layer profile.
  int layer_inferences = 0;
  // How many of the slowest layers the log lists (the report and PerfResult keep every layer).
  int top_layers = 10;
  // Requests in flight at once (runtime/concurrent_inference.h); unset: one synchronous inference
  // after another; 0: the backend's own number (OpenVINO's optimal number of infer requests).
  // Throughput is then the completed requests over the wall time, latency each request's.
  std::optional<int> requests;
  // Shape sweep (`--perf-shapes`): after the main measurement, each runner is measured again (warm_up,
  // then the timed inferences) on each of these data loaders' feeds (made once, from the first
  // runner's input metadata, and reused by every runner), one PerfResult::sweep entry each.
  std::vector<DataLoaderFunc> sweep;
  std::function<void(const std::vector<NamedTensors>&)> on_feeds;
};

// Latency statistics in seconds; percentiles interpolated linearly between the two nearest
// samples (numpy.percentile's default).
struct LatencyStatistics {
  double min = 0, mean = 0, median = 0, p25 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
  double iqr() const { return p75 - p25; }
  static LatencyStatistics of(std::vector<double> seconds);
};

struct PerfResult {
  std::string runner_name;
  int warm_up = 0;
  std::vector<double> latencies;  // seconds, one per timed inference, in run order
  LatencyStatistics latency;
  double wall_seconds = 0;        // the timed inferences end to end
  double throughput = 0;          // timed inferences per second of wall_seconds
  // Inferences in flight at once (1 without PerfOptions::requests) and, with requests, what ran
  // concurrently in words (or why the runner ran one at a time).
  int requests = 1;
  std::string concurrency;
  // What the runner did to measure the feed's static shapes (Runner::compile_for_feed_shapes), in
  // words; empty when it did nothing.
  std::string compiled_for_feed;
  // The backend's own report of its settings (Runner::backend_properties), name and value.
  std::vector<std::pair<std::string, std::string>> backend_properties;
  // The shape of each input in the (first) feed measured.
  std::vector<std::pair<std::string, Shape>> input_shapes;
  // With PerfOptions::sweep: one measurement per swept shape, in order (their memory, properties,
  // layers and sweeps left empty).
  std::vector<PerfResult> sweep;
  // Host memory of this process: resident set before activation and its peak up to the end of the
  // timed inferences (peak_reset: the peak was reset before activation, so it is this runner's;
  // otherwise it is the process's peak so far).
  int64_t rss_before_bytes = 0, rss_peak_bytes = 0;
  bool peak_reset = false;
  std::optional<runtime::WorkerMemory> worker;     // a runner inferring in a worker process
  std::optional<runtime::LayerProfile> layers;     // with layer_inferences, when the backend reports
  std::string layers_unavailable;                  // why there is no profile, when one was asked for

  int64_t memory_added_bytes() const { return rss_peak_bytes - rss_before_bytes; }
  nlohmann::ordered_json to_json() const;
};

struct PerfRun {
  RunResults results;  // each runner's outputs of its untimed inference per feed, for the comparison
  std::vector<PerfResult> perf;
};

PerfRun measure_performance(const std::vector<runtime::Runner*>& runners, const DataLoaderFunc& data_loader,
                            const PerfOptions& options);

// The log's summary table of several runners (one line each: median, p90, p99, IQR, throughput,
// memory added).
void log_perf_summary(const std::vector<PerfResult>& results);

// The "perf" entry of the JSON report: one object per runner.
nlohmann::ordered_json perf_report(const std::vector<PerfResult>& results);

}  // namespace parity::compare
