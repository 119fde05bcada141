// What Comparator::run and Comparator::run_layerwise share: running one runner over the feeds.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "parity/compare/comparator.h"

namespace parity::compare::detail {

struct RunnerSetup {
  // Set for the first runner: the feeds are made from its input metadata once it is active.
  const DataLoaderFunc* data_loader = nullptr;
  std::function<void(const std::vector<NamedTensors>&)> on_feeds;
  int warm_up = 0;
  runtime::IntermediateOutputs intermediates;  // held (returned with the outputs)
  bool drop_intermediates = false;             // streamed and dropped; only described in the log
  std::set<std::string> exclude_outputs;
  // Streams every tensor (iteration, tensor) instead of holding intermediates.
  std::function<void(int64_t, const runtime::ProducedTensor&)> on_tensor;
};

// The feeds from `data_loader`, each validated against `first`'s inputs, then `on_feeds`.
std::vector<NamedTensors> make_feeds(runtime::Runner& first, const DataLoaderFunc& data_loader,
                                     const std::function<void(const std::vector<NamedTensors>&)>& on_feeds);

// Activates `runner`, makes `feeds` when setup.data_loader is set, runs the warm-up and every
// iteration, and deactivates it; logs Polygraphy's lines.
RunnerResults run_runner(runtime::Runner& runner, std::vector<NamedTensors>& feeds, const RunnerSetup& setup);

// run_runner in a child process (RunOptions::use_subprocess; comparator_subprocess.cpp): the
// results and, when setup.data_loader is set, the feeds come back; setup.on_feeds is then called
// here, in the caller's process. setup.on_tensor is not supported (it would run in the child).
RunnerResults run_runner_in_subprocess(runtime::Runner& runner, std::vector<NamedTensors>& feeds,
                                       const RunnerSetup& setup);

}  // namespace parity::compare::detail
