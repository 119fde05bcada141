#include "args/perf_args.h"

#include <algorithm>
#include <stdexcept>

#include "args/value_parsing.h"
#include "parity/core/error.h"

namespace parity::cli {

namespace {
// Timed inferences when neither --iterations nor --duration is given: enough for a p99.
constexpr int kDefaultIterations = 100;
}  // namespace

void PerfArgs::add_to(CLI::App& app) {
  const char* group = "Performance";
  app.add_flag("--perf", perf_,
               "Performance mode: per runner, latency (min, mean, median, p90, p95, p99, max, interquartile range), "
               "throughput and host memory added, over --iterations timed inferences (default 100) or --duration, "
               "after --warm-up; one input feed made once and reused; outputs still compared (docs/perf.md)")
      ->group(group);
  app.add_option("--duration", duration_,
                 "Performance mode: run the timed inferences for this many seconds instead of --iterations")
      ->group(group);
  app.add_option("--requests", requests_,
                 "Performance mode: inference requests in flight at once, each started again as it completes "
                 "(OpenVINO: asynchronous infer requests, 'auto' for the compiled model's optimal number; ONNX "
                 "Runtime: concurrent Run calls on its session from N threads); the throughput counts every completed "
                 "request, each latency is one request's. Backends that run one inference at a time say so and do")
      ->group(group);
  app.add_option("--perf-shapes", shapes_,
                 "Performance mode: shape sweep: after the main measurement, measure each runner again per shape set "
                 "and print one row per set. Entries <name>:[d0,d1,...] as --input-shapes takes them; a name given "
                 "again starts the next set (--perf-shapes ids:[1,8] mask:[1,8] ids:[1,64] mask:[1,64]); inputs a set "
                 "leaves out keep --input-shapes. Random data only")
      ->group(group);
  app.add_option("--perf-layers", layers_,
                 "Performance mode: profile each runner's layers (ONNX Runtime's profiler, OpenVINO's performance "
                 "counters) after the timed inferences and list the N slowest")
      ->group(group);
  app.add_option("--perf-layer-iterations", layer_iterations_,
                 "Performance mode: inferences the per-layer profile averages over (default 10)")
      ->group(group);
}

void PerfArgs::parse(const CLI::App& app, DataLoaderArgs& data_loader) {
  const bool duration_given = app.count("--duration") > 0;
  const bool iterations_given = app.count("--iterations") > 0;
  if (!perf_) {
    for (const char* flag : {"--duration", "--requests", "--perf-shapes", "--perf-layers", "--perf-layer-iterations"})
      if (app.count(flag)) raise<InvalidInputError>("{} is a performance mode flag: add --perf", flag);
    return;
  }
  if (duration_given && !(duration_ > 0))
    raise<InvalidInputError>("--duration must be more than 0 seconds, got {}", duration_);
  if (duration_given && iterations_given)
    raise<InvalidInputError>("--perf: give --iterations (the timed inferences) or --duration (seconds), not both");
  if (iterations_given && data_loader.iterations() < 1)
    raise<InvalidInputError>("--perf: --iterations must be at least 1 (the timed inferences), got {}",
                             data_loader.iterations());
  if (layers_ < 0) raise<InvalidInputError>("--perf-layers must be 0 or more, got {}", layers_);
  if (layer_iterations_ < 1)
    raise<InvalidInputError>("--perf-layer-iterations must be at least 1, got {}", layer_iterations_);
  if (app.count("--requests")) {
    if (requests_ == "auto") {
      options_.requests = 0;
    } else {
      int requests = 0;
      std::size_t used = 0;
      try {
        requests = std::stoi(requests_, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != requests_.size() || requests < 1)
        raise<InvalidInputError>("--requests must be a number of requests (at least 1) or 'auto', got '{}'", requests_);
      options_.requests = requests;
    }
  }
  if (!shapes_.empty()) {
    if (!data_loader.uses_random_data())
      raise<InvalidInputError>("--perf-shapes generates random data of each shape: leave out --load-inputs and "
                               "--data-loader-script");
    std::vector<std::vector<std::pair<std::string, std::vector<int64_t>>>> sets(1);
    for (const auto& entry : shapes_) {
      auto [name, dims] = split_named_bracket(entry, true, "--perf-shapes");
      auto& current = sets.back();
      if (std::any_of(current.begin(), current.end(), [&](const auto& given) { return given.first == name; }))
        sets.emplace_back();
      std::vector<int64_t> parsed = parse_dims(dims, "--perf-shapes " + name);
      if (std::any_of(parsed.begin(), parsed.end(), [](int64_t dim) { return dim < 0; }))
        raise<InvalidInputError>("--perf-shapes {}: every dimension must be a fixed size (the sweep generates data of "
                                 "that shape)",
                                 entry);
      sets.back().emplace_back(name, std::move(parsed));
    }
    for (const auto& set : sets) options_.sweep.push_back(data_loader.random_data_loader_with_shapes(set));
  }
  options_.warm_up = data_loader.warm_up();
  options_.iterations = iterations_given ? data_loader.iterations() : kDefaultIterations;
  if (duration_given) options_.duration = duration_;
  options_.layer_inferences = layers_ > 0 ? layer_iterations_ : 0;
  options_.top_layers = layers_;
  data_loader.generate_one_feed();
}

}  // namespace parity::cli
