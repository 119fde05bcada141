// The speed cost `debug precision` reports: a candidate's inference time on the runner under test,
// with and without the nodes found kept in higher precision.
#pragma once

#include "parity/core/array_io.h"
#include "parity/runtime/runner.h"

namespace parity::debug {

// Activates `runner`, infers `feed` once to warm up (compilation, first allocations), then `runs`
// times, and deactivates it. Returns the median of Runner::last_inference_time over those runs, in
// seconds (the backend's run without feed validation). `runs` must be at least 1.
double median_latency(runtime::Runner& runner, const NamedTensors& feed, int runs);

}  // namespace parity::debug
