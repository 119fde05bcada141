// `parity run --perf`: performance mode's flags (--perf, --duration, --requests, --perf-shapes,
// --perf-layers, --perf-layer-iterations), read with the data loader's --iterations (the timed inferences) and
// --warm-up, turned into compare::PerfOptions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "args/data_loader_args.h"
#include "parity/compare/perf.h"

namespace parity::cli {

class PerfArgs {
 public:
  void add_to(CLI::App& app);
  // Checks the flags (before anything runs); with --perf, has the data loader make one feed.
  void parse(const CLI::App& app, DataLoaderArgs& data_loader);
  bool enabled() const { return perf_; }
  const compare::PerfOptions& options() const { return options_; }

 private:
  bool perf_ = false;
  double duration_ = 0;
  std::string requests_;  // --requests: a count or "auto"
  std::vector<std::string> shapes_;  // --perf-shapes: name:[dims] entries
  int layers_ = 0;
  int layer_iterations_ = 10;
  compare::PerfOptions options_;
};

}  // namespace parity::cli
