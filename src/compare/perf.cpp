// Performance mode: the timed loop, its statistics, host memory, per-layer profiles, their log
// lines and JSON (parity/compare/perf.h).
#include "parity/compare/perf.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "comparator_internal.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::compare {

namespace {

// A "VmRSS:    1234 kB" line of /proc/self/status, in bytes; 0 when absent.
int64_t status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line))
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream value(line.substr(prefix.size()));
      int64_t kib = 0;
      value >> kib;
      return kib * 1024;
    }
  return 0;
}

// Resets the process's peak resident set (VmHWM) to its current one (Linux's clear_refs "5").
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0)); }
std::string ms(double seconds) { return fmt::format("{:.4g}", seconds * 1000.0); }

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double position = q / 100.0 * static_cast<double>(sorted.size() - 1);
  auto low = static_cast<std::size_t>(std::floor(position));
  std::size_t high = std::min(low + 1, sorted.size() - 1);
  double fraction = position - static_cast<double>(low);
  return sorted[low] + (sorted[high] - sorted[low]) * fraction;
}

// The layers' time per inference: the sum of their means over the profiled inferences.
double layers_seconds(const runtime::LayerProfile& profile) {
  double total = 0;
  for (const auto& layer : profile.layers) total += layer.seconds;
  return total;
}

// A part of the profiled inferences' mean latency, as a share of it.
double share_of(double seconds, double latency) { return latency > 0 ? seconds / latency : 0.0; }

// The per-layer table: the `top` slowest layers, each with its share of the profiled inferences'
// mean latency, mean time per inference, kernel, precision and ONNX nodes, then the time outside the
// layers, part by part; above it the profiled latency beside the unprofiled one and the layers' sum
// as a share of both.
void log_layers(const PerfResult& result, int top) {
  const auto& profile = *result.layers;
  const double total = layers_seconds(profile);
  const double profiled = runtime::mean_of(profile.latencies);
  const double profiled_median = runtime::median_of(profile.latencies);
  std::vector<const runtime::LayerTime*> sorted;
  for (const auto& layer : profile.layers) sorted.push_back(&layer);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->seconds > b->seconds; });
  sorted.resize(std::min(sorted.size(), static_cast<std::size_t>(std::max(top, 0))));
  std::string lines = fmt::format("\n    {:>6} | {:>9} | {} | {} | {} | {}", "share", "time (ms)", "layer [type]",
                                  "kernel", "precision", "ONNX nodes");
  for (const auto* layer : sorted) {
    std::string nodes = layer->onnx_nodes.empty() ? profile.without_onnx_nodes : fmt::format("{}", fmt::join(layer->onnx_nodes, ", "));
    lines += fmt::format("\n    {:5.1f}% | {:9.4f} | {} [{}] | {} | {} | {}", 100.0 * share_of(layer->seconds, profiled),
                         layer->seconds * 1000.0, layer->name, layer->layer_type,
                         layer->kernel.empty() ? "?" : layer->kernel, layer->precision.empty() ? "?" : layer->precision,
                         nodes);
  }
  if (sorted.size() < profile.layers.size()) {
    double rest = 0;
    for (const auto& layer : profile.layers) rest += layer.seconds;
    for (const auto* layer : sorted) rest -= layer->seconds;
    lines += fmt::format("\n    {:5.1f}% | {:9.4f} | (the other {} layers)", 100.0 * share_of(rest, profiled), rest * 1000.0,
                         profile.layers.size() - sorted.size());
  }
  for (const auto& part : profile.outside_times)
    lines += fmt::format("\n    {:5.1f}% | {:9.4f} | ({}: {})", 100.0 * share_of(part.seconds, profiled),
                         part.seconds * 1000.0, part.name, part.what);
  const double unprofiled = result.latency.median;
  std::string comparison = fmt::format(
      "\n    profiled inferences: mean {} ms, median {} ms; unprofiled mean {} ms, median {} ms: profiling costs "
      "{:.2f}x (median over median)"
      "\n    layers sum {} ms per inference = {:.1f}% of the profiled inferences' mean latency, {:.1f}% of the "
      "unprofiled mean latency",
      ms(profiled), ms(profiled_median), ms(result.latency.mean), ms(unprofiled),
      unprofiled > 0 ? profiled_median / unprofiled : 0.0, ms(total), 100.0 * share_of(total, profiled),
      100.0 * share_of(total, result.latency.mean));
  if (profile.run_seconds > 0)
    comparison += fmt::format(" ({:.1f}% of the backend's own run time {} ms while profiling)",
                              100.0 * share_of(total, profile.run_seconds), ms(profile.run_seconds));
  if (!profile.unprofiled_latencies.empty()) {
    const double cost = profiled_median - runtime::median_of(profile.unprofiled_latencies);
    comparison += fmt::format(
        "\n    the profiler's own cost: {} ms per inference = {:.1f}% of the profiled inferences' median latency "
        "(less the median of {} unprofiled inferences of the runner's own session, run after them){}",
        ms(cost), 100.0 * share_of(cost, profiled_median), profile.unprofiled_latencies.size(),
        profile.events_per_inference > 0
            ? fmt::format(", {:.3g} us per event of the {} it records per inference", 1e6 * cost / profile.events_per_inference,
                          profile.events_per_inference)
            : "");
  }
  log::info("{:35} | Per-layer time ({}, mean of {} profiled inference(s)): the {} slowest of {} layers; outside the "
            "layers: {}{}{}",
            result.runner_name, profile.source, profile.inferences, sorted.size(), profile.layers.size(),
            profile.outside, comparison, lines);
}

void log_result(const PerfResult& result) {
  const auto& l = result.latency;
  std::string memory =
      result.peak_reset
          ? fmt::format("{} added (resident {} before activation, peak {})", mib(result.memory_added_bytes()),
                        mib(result.rss_before_bytes), mib(result.rss_peak_bytes))
          : fmt::format("{} added at most (resident {} before activation, process peak {}: the peak could not be "
                        "reset, so it may predate this runner)",
                        mib(result.memory_added_bytes()), mib(result.rss_before_bytes), mib(result.rss_peak_bytes));
  if (result.worker) {
    memory += fmt::format("; worker process peak {}", mib(result.worker->peak_rss_bytes));
    if (result.worker->gpu_peak_bytes) memory += fmt::format("; GPU peak allocated {}", mib(*result.worker->gpu_peak_bytes));
    else if (!result.worker->gpu_note.empty()) memory += fmt::format("; no GPU memory figure: {}", result.worker->gpu_note);
  }
  std::string details;
  if (!result.concurrency.empty())
    details += fmt::format("\n    concurrency: {}; the throughput counts every completed request, each latency is "
                           "one request's",
                           result.concurrency);
  if (!result.backend_properties.empty()) {
    std::vector<std::string> properties;
    for (const auto& [name, value] : result.backend_properties) properties.push_back(name + " " + value);
    details += fmt::format("\n    backend properties: {}", fmt::join(properties, " | "));
  }
  const double spread = l.median > 0 ? 100.0 * l.iqr() / l.median : 0.0;
  log::info("{:35} | Performance: {} timed inference(s) in {:.4g} s after {} warm-up | throughput {:.4g} "
            "inferences/s\n    latency (ms): min {} | mean {} | median {} | p90 {} | p95 {} | p99 {} | max {} | IQR {} "
            "({:.1f}% of the median)\n    host memory: {}{}",
            result.runner_name, result.latencies.size(), result.wall_seconds, result.warm_up, result.throughput,
            ms(l.min), ms(l.mean), ms(l.median), ms(l.p90), ms(l.p95), ms(l.p99), ms(l.max), ms(l.iqr()), spread,
            memory, details);
  if (result.latencies.size() >= 4 && spread > 10.0)
    log::warning("{}: the latency is not stable (interquartile range {:.1f}% of the median): other work on the "
                 "machine, frequency scaling or too few inferences; run longer (--duration) or on a quieter machine",
                 result.runner_name, spread);
}

// The timed inferences one after another: each timed alone, the loop as a whole.
void time_one_at_a_time(runtime::Runner& runner, const std::vector<NamedTensors>& feeds, const PerfOptions& options,
                        PerfResult& result) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = options.duration ? start + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(*options.duration))
                                         : Clock::time_point::max();
  std::size_t next = 0;
  for (;;) {
    if (options.duration ? (!result.latencies.empty() && Clock::now() >= deadline)
                         : result.latencies.size() >= static_cast<std::size_t>(options.iterations))
      break;
    const NamedTensors& feed = feeds[next];
    next = (next + 1) % feeds.size();
    const auto before = Clock::now();
    runner.infer(feed);
    result.latencies.push_back(std::chrono::duration<double>(Clock::now() - before).count());
  }
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

void time_inferences(runtime::Runner& runner, const std::vector<NamedTensors>& feeds, const PerfOptions& options,
                     PerfResult& result);

std::string shapes_text(const std::vector<std::pair<std::string, Shape>>& shapes) {
  std::vector<std::string> parts;
  for (const auto& [name, shape] : shapes) parts.push_back(fmt::format("{}:[{}]", name, fmt::join(shape, ",")));
  return fmt::format("{}", fmt::join(parts, " "));
}

// The shape sweep's table of one runner: one row per swept shape.
void log_sweep(const PerfResult& result) {
  std::size_t width = 6;
  for (const auto& point : result.sweep) width = std::max(width, shapes_text(point.input_shapes).size());
  std::string lines = fmt::format("\n    {:{}} | {:>10} | {:>10} | {:>10} | {:>10} | {:>10} | {:>14}", "shapes", width,
                                  "inferences", "median ms", "p90 ms", "p99 ms", "IQR ms", "inferences/s");
  for (const auto& point : result.sweep)
    lines += fmt::format("\n    {:{}} | {:>10} | {:>10} | {:>10} | {:>10} | {:>10} | {:>14.4g}",
                         shapes_text(point.input_shapes), width, point.latencies.size(), ms(point.latency.median),
                         ms(point.latency.p90), ms(point.latency.p99), ms(point.latency.iqr()), point.throughput);
  log::info("{:35} | Shape sweep: {} shape(s), {} request(s) in flight{}", result.runner_name, result.sweep.size(),
            result.sweep.front().requests, lines);
}

PerfResult measure_runner(runtime::Runner& runner, std::vector<NamedTensors>& feeds,
                          std::vector<std::vector<NamedTensors>>& sweep_feeds, const DataLoaderFunc* data_loader,
                          const PerfOptions& options, RunnerResults& outputs) {
  PerfResult result;
  result.runner_name = runner.name();
  result.warm_up = options.warm_up;
  result.peak_reset = reset_peak_rss();
  result.rss_before_bytes = status_bytes("VmRSS");
  log::start("{:35} | Activating and starting inference (performance mode)", runner.name());
  runtime::ActiveRunner active(runner);
  if (data_loader) feeds = detail::make_feeds(runner, *data_loader, options.on_feeds);
  if (feeds.empty()) raise<InvalidInputError>("{}: performance mode needs at least one input feed", runner.name());
  if (options.sweep.empty()) {
    result.compiled_for_feed = runner.compile_for_feed_shapes(feeds);
    if (!result.compiled_for_feed.empty()) log::info("{:35} | {}", runner.name(), result.compiled_for_feed);
  }
  outputs.runner_name = runner.name();
  for (const auto& feed : feeds) {
    IterationResult iteration;
    iteration.runner_name = runner.name();
    iteration.outputs = runner.infer(feed);
    iteration.runtime = runner.last_inference_time();
    outputs.iterations.push_back(std::move(iteration));
  }
  for (int i = 0; i < options.warm_up; ++i) runner.infer(feeds[static_cast<std::size_t>(i) % feeds.size()]);

  result.backend_properties = runner.backend_properties();
  time_inferences(runner, feeds, options, result);
  result.rss_peak_bytes = std::max(status_bytes("VmHWM"), result.rss_before_bytes);
  result.worker = runner.worker_memory();
  if (options.layer_inferences > 0) {
    auto profile = runner.profile_layers(feeds.front(), options.layer_inferences);
    if (profile.unavailable.empty()) result.layers = std::move(profile);
    else result.layers_unavailable = std::move(profile.unavailable);
  }
  for (std::size_t i = 0; i < options.sweep.size(); ++i) {
    if (sweep_feeds.size() <= i) sweep_feeds.push_back(detail::make_feeds(runner, options.sweep[i], nullptr));
    if (sweep_feeds[i].empty())
      raise<InvalidInputError>("{}: performance mode's shape sweep needs an input feed", runner.name());
    PerfResult point;
    point.runner_name = runner.name();
    point.warm_up = options.warm_up;
    for (int w = 0; w < options.warm_up; ++w) runner.infer(sweep_feeds[i][static_cast<std::size_t>(w) % sweep_feeds[i].size()]);
    time_inferences(runner, sweep_feeds[i], options, point);
    result.sweep.push_back(std::move(point));
  }
  log::finish("{:35} | Completed {} timed inference(s)", runner.name(), result.latencies.size());
  log_result(result);
  if (result.layers) log_layers(result, options.top_layers);
  else if (options.layer_inferences > 0)
    log::warning("{}: no per-layer time: {}", runner.name(), result.layers_unavailable);
  if (!result.sweep.empty()) log_sweep(result);
  return result;
}

// The timed inferences of `feeds` (after the warm-up): concurrently with options.requests where the
// runner can, else one after another; their latencies, wall time, throughput and statistics.
void time_inferences(runtime::Runner& runner, const std::vector<NamedTensors>& feeds, const PerfOptions& options,
                     PerfResult& result) {
  for (const auto& [name, tensor] : feeds.front()) result.input_shapes.emplace_back(name, tensor.shape());
  bool timed = false;
  if (options.requests) {
    runtime::ConcurrentInference concurrent =
        runner.infer_concurrently(feeds, {*options.requests, options.iterations, options.duration});
    if (concurrent.unavailable.empty()) {
      result.requests = concurrent.requests;
      result.concurrency = std::move(concurrent.how);
      result.latencies = std::move(concurrent.latencies);
      result.wall_seconds = concurrent.wall_seconds;
      timed = true;
    } else {
      result.concurrency = "one inference at a time: " + concurrent.unavailable;
      log::warning("{}: --requests: {}", runner.name(), result.concurrency);
    }
  }
  if (!timed) time_one_at_a_time(runner, feeds, options, result);
  result.throughput = result.wall_seconds > 0 ? static_cast<double>(result.latencies.size()) / result.wall_seconds : 0;
  result.latency = LatencyStatistics::of(result.latencies);
}

nlohmann::ordered_json statistics_json(const LatencyStatistics& l) {
  return {{"min", l.min},       {"mean", l.mean}, {"median", l.median}, {"p25", l.p25}, {"p75", l.p75},
          {"p90", l.p90},       {"p95", l.p95},   {"p99", l.p99},       {"max", l.max}, {"iqr", l.iqr()}};
}

}  // namespace

LatencyStatistics LatencyStatistics::of(std::vector<double> seconds) {
  LatencyStatistics s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  s.min = seconds.front();
  s.max = seconds.back();
  s.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
  s.median = percentile(seconds, 50);
  s.p25 = percentile(seconds, 25);
  s.p75 = percentile(seconds, 75);
  s.p90 = percentile(seconds, 90);
  s.p95 = percentile(seconds, 95);
  s.p99 = percentile(seconds, 99);
  return s;
}

nlohmann::ordered_json PerfResult::to_json() const {
  nlohmann::ordered_json json;
  json["runner"] = runner_name;
  json["warm_up"] = warm_up;
  json["iterations"] = latencies.size();
  json["wall_seconds"] = wall_seconds;
  json["throughput"] = throughput;
  json["requests"] = requests;
  if (!concurrency.empty()) json["concurrency"] = concurrency;
  if (!compiled_for_feed.empty()) json["compiled_for_feed"] = compiled_for_feed;
  if (!backend_properties.empty()) {
    nlohmann::ordered_json properties = nlohmann::ordered_json::object();
    for (const auto& [name, value] : backend_properties) properties[name] = value;
    json["backend_properties"] = properties;
  }
  json["input_shapes"] = nlohmann::ordered_json::object();
  for (const auto& [name, shape] : input_shapes) json["input_shapes"][name] = shape;
  json["latency_seconds"] = statistics_json(latency);
  json["latencies"] = latencies;
  json["host_memory"] = {{"rss_before_bytes", rss_before_bytes},
                         {"rss_peak_bytes", rss_peak_bytes},
                         {"added_bytes", memory_added_bytes()},
                         {"peak_reset", peak_reset}};
  if (worker) {
    nlohmann::ordered_json w = {{"peak_rss_bytes", worker->peak_rss_bytes}};
    w["gpu_peak_bytes"] = worker->gpu_peak_bytes ? nlohmann::ordered_json(*worker->gpu_peak_bytes) : nullptr;
    if (!worker->gpu_note.empty()) w["gpu_note"] = worker->gpu_note;
    json["worker_memory"] = w;
  }
  if (layers) {
    nlohmann::ordered_json l;
    l["source"] = layers->source;
    l["inferences"] = layers->inferences;
    const double total = layers_seconds(*layers);
    const double profiled = runtime::mean_of(layers->latencies);
    const double profiled_median = runtime::median_of(layers->latencies);
    l["sum_seconds_per_inference"] = total;
    l["sum_over_median_latency"] = latency.median > 0 ? total / latency.median : 0.0;
    l["sum_over_mean_latency"] = share_of(total, latency.mean);
    l["profiled_latency_seconds"] = {{"mean", profiled}, {"median", profiled_median}};
    l["profiled_latencies"] = layers->latencies;
    l["sum_over_profiled_latency"] = share_of(total, profiled);
    l["profiling_overhead"] = latency.median > 0 ? profiled_median / latency.median : 0.0;
    if (layers->run_seconds > 0) l["backend_run_seconds_per_inference"] = layers->run_seconds;
    if (!layers->unprofiled_latencies.empty()) {
      l["unprofiled_latencies"] = layers->unprofiled_latencies;
      l["profiler_cost_seconds_per_inference"] =
          runtime::median_of(layers->latencies) - runtime::median_of(layers->unprofiled_latencies);
    }
    if (layers->events_per_inference > 0) l["profiler_events_per_inference"] = layers->events_per_inference;
    l["outside"] = layers->outside;
    l["outside_times"] = nlohmann::ordered_json::array();
    for (const auto& part : layers->outside_times)
      l["outside_times"].push_back({{"name", part.name},
                                    {"what", part.what},
                                    {"seconds_per_inference", part.seconds},
                                    {"share", share_of(part.seconds, profiled)}});
    l["layers"] = nlohmann::ordered_json::array();
    for (const auto& layer : layers->layers)
      l["layers"].push_back({{"name", layer.name},
                             {"type", layer.layer_type},
                             {"kernel", layer.kernel},
                             {"precision", layer.precision},
                             {"seconds_per_inference", layer.seconds},
                             {"share", share_of(layer.seconds, profiled)},
                             {"onnx_nodes", layer.onnx_nodes}});
    json["layers"] = l;
  } else if (!layers_unavailable.empty()) {
    json["layers_unavailable"] = layers_unavailable;
  }
  if (!sweep.empty()) {
    json["sweep"] = nlohmann::ordered_json::array();
    for (const auto& point : sweep) {
      nlohmann::ordered_json entry = point.to_json();
      entry.erase("runner");
      entry.erase("host_memory");
      json["sweep"].push_back(std::move(entry));
    }
  }
  return json;
}

PerfRun measure_performance(const std::vector<runtime::Runner*>& runners, const DataLoaderFunc& data_loader,
                            const PerfOptions& options) {
  if (options.duration && !(*options.duration > 0))
    raise<InvalidInputError>("performance mode: the duration must be more than 0 seconds, got {}", *options.duration);
  if (!options.duration && options.iterations < 1)
    raise<InvalidInputError>("performance mode: the timed iterations must be at least 1, got {}", options.iterations);
  if (options.warm_up < 0) raise<InvalidInputError>("performance mode: the warm-up must be 0 or more");
  if (options.requests && *options.requests < 0)
    raise<InvalidInputError>("performance mode: the requests in flight must be 0 (the backend's choice) or more, got {}",
                             *options.requests);
  const unsigned cores = std::thread::hardware_concurrency();
  if (options.requests && cores > 0 && static_cast<unsigned>(*options.requests) > cores)
    log::warning("performance mode: {} requests in flight on a machine with {} hardware threads: the requests only "
                 "wait for each other, which raises each one's latency without adding throughput",
                 *options.requests, cores);
  PerfRun run;
  std::vector<NamedTensors> feeds;
  std::vector<std::vector<NamedTensors>> sweep_feeds;
  for (std::size_t i = 0; i < runners.size(); ++i) {
    RunnerResults outputs;
    run.perf.push_back(
        measure_runner(*runners[i], feeds, sweep_feeds, i == 0 ? &data_loader : nullptr, options, outputs));
    run.results.push_back(std::move(outputs));
  }
  if (run.perf.size() > 1) log_perf_summary(run.perf);
  return run;
}

void log_perf_summary(const std::vector<PerfResult>& results) {
  std::size_t width = 6;
  for (const auto& result : results) width = std::max(width, result.runner_name.size());
  std::string lines = fmt::format("\n    {:{}} | {:>10} | {:>10} | {:>10} | {:>10} | {:>14} | {:>12}", "runner", width,
                                  "median ms", "p90 ms", "p99 ms", "IQR ms", "inferences/s", "memory added");
  for (const auto& r : results)
    lines += fmt::format("\n    {:{}} | {:>10} | {:>10} | {:>10} | {:>10} | {:>14.4g} | {:>12}", r.runner_name, width,
                         ms(r.latency.median), ms(r.latency.p90), ms(r.latency.p99), ms(r.latency.iqr()), r.throughput,
                         mib(r.worker ? r.worker->peak_rss_bytes : r.memory_added_bytes()));
  log::info("Performance summary{}", lines);
}

nlohmann::ordered_json perf_report(const std::vector<PerfResult>& results) {
  auto json = nlohmann::ordered_json::array();
  for (const auto& result : results) json.push_back(result.to_json());
  return json;
}

}  // namespace parity::compare
